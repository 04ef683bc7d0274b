// How many fragments one upstream message may come in. ws keeps each fragment as its own Buffer until
// the last one arrives; maxPayload bounds their bytes, not their number. A server that sent 1 MiB in
// one-byte fragments (3 bytes each on the wire) made one session hold a million Buffers: 120 MB of
// heap from 3 MB of traffic. Checked once per socket read, after ws has parsed it: nothing per frame.
import type WebSocket from 'ws';
import { rawSocket } from './frame-writer.js';

/** Real servers fragment at kilobytes or more: 4,096 fragments still carry 1 MiB at 256 bytes each. */
export const MAX_FRAGMENTS = 4096;

interface Receiver { _fragments: unknown[] }

/**
 * Calls `tooMany` (once) when a message in progress passes MAX_FRAGMENTS. Throws for a `ws` without
 * the receiver it reads (a version other than the pinned one), at connect time.
 */
export function watchFragments(ws: WebSocket, tooMany: () => void): void {
  const receiver = (ws as unknown as { _receiver?: Receiver })._receiver;
  if (!receiver || !Array.isArray(receiver._fragments)) {
    throw new Error('the ws client socket has no receiver fragments to watch (ws version other than 8.18.3?)');
  }
  const raw = rawSocket(ws);
  const check = (): void => {
    // ws replaces the array with each message: read it afresh.
    if (receiver._fragments.length <= MAX_FRAGMENTS) return;
    raw.removeListener('data', check);
    tooMany();
  };
  // After ws' own listener (added at the upgrade), so the read has been parsed.
  raw.on('data', check);
}
