// A lean SignalR client over a minimal WebSocket client (ws-client.ts) for load generation (the
// official client is too heavy to drive hundreds of connections from one process): negotiate,
// handshake, JSON and MessagePack framing, invocations with completions for set-up, and a raw
// per-message hook and frames masked once for the hot path.
import { decode as msgpackDecode, Encoder } from '@msgpack/msgpack';
import { encodeClientFrame, WsClient } from './ws-client.js';

export type Protocol = 'json' | 'messagepack';

const RS = '\x1e';
const encoder = new Encoder();

/** One SignalR message as the hot path sees it: its target (invocations) and arguments. */
export interface Incoming {
  type: number;
  target?: string;
  args?: unknown[];
  invocationId?: string;
  error?: string;
}

function varint(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

/** A MessagePack message's items, encoded and prefixed with their length. */
function msgpackFrame(items: unknown[]): Buffer {
  const body = encoder.encode(items);
  return Buffer.concat([Buffer.from(varint(body.length)), body]);
}

/** A framed invocation in the protocol's wire format, ready to send many times. */
export function invocationFrame(protocol: Protocol, target: string, args: unknown[], invocationId?: string): string | Buffer {
  if (protocol === 'json') {
    return JSON.stringify(invocationId ? { type: 1, invocationId, target, arguments: args } : { type: 1, target, arguments: args }) + RS;
  }
  return msgpackFrame([1, {}, invocationId ?? null, target, args]);
}

/** A framed Ping, which a client sends while it has nothing else to say (the server's client timeout). */
export function pingFrame(protocol: Protocol): string | Buffer {
  return protocol === 'json' ? JSON.stringify({ type: 6 }) + RS : msgpackFrame([6]);
}

/** Splits a MessagePack frame into message bodies (VarInt length prefixes). */
export function* binaryMessages(data: Buffer): Generator<Buffer> {
  let at = 0;
  while (at < data.length) {
    let length = 0;
    let shift = 0;
    let b: number;
    do {
      b = data[at++]!;
      length |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    yield data.subarray(at, at + length);
    at += length;
  }
}

export function parseJsonRecord(record: string): Incoming {
  const m = JSON.parse(record) as { type: number; target?: string; arguments?: unknown[]; invocationId?: string; error?: string };
  return { type: m.type, target: m.target, args: m.arguments, invocationId: m.invocationId, error: m.error };
}

export function parseMsgpackMessage(body: Buffer): Incoming {
  const items = msgpackDecode(body) as unknown[];
  const type = items[0] as number;
  if (type === 1) return { type, invocationId: (items[2] as string | null) ?? undefined, target: items[3] as string, args: items[4] as unknown[] };
  if (type === 3) return { type, invocationId: items[2] as string, error: items[3] === 1 ? (items[4] as string) : undefined };
  return { type };
}

export class RawHubClient {
  /** Called for every frame once connected; the default decodes every message and calls `onMessage`. */
  onFrame: (data: Buffer, binary: boolean) => void;
  onMessage: (message: Incoming) => void = () => {};
  private readonly completions = new Map<string, (m: Incoming) => void>();
  private nextId = 1;

  private constructor(readonly ws: WsClient, readonly protocol: Protocol) {
    this.onFrame = (data) => this.decodeFrame(data, (m) => this.dispatch(m));
    ws.onMessage = (data, binary) => this.onFrame(data, binary);
  }

  /** Negotiates (v1), opens the WebSocket and completes the handshake. */
  static async connect(baseUrl: string, protocol: Protocol, timeoutMs = 10_000): Promise<RawHubClient> {
    const negotiate = await fetch(`${baseUrl}/voice-hub/negotiate?negotiateVersion=1`, { method: 'POST', signal: AbortSignal.timeout(timeoutMs) });
    if (negotiate.status !== 200) throw new Error(`negotiate answered ${negotiate.status}`);
    const { connectionToken } = (await negotiate.json()) as { connectionToken: string };
    const ws = await WsClient.connect(`${baseUrl.replace(/^http/, 'ws')}/voice-hub?id=${encodeURIComponent(connectionToken)}`, timeoutMs);
    const handshake = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('handshake timed out')), timeoutMs);
      ws.onMessage = (data: Buffer) => {
        clearTimeout(timer);
        const text = data.toString('utf8');
        if (!text.startsWith('{}')) reject(new Error(`handshake refused: ${text}`));
        else resolve();
      };
    });
    ws.send(JSON.stringify({ protocol, version: 1 }) + RS);
    await handshake;
    return new RawHubClient(ws, protocol);
  }

  /** Decodes every message of a frame (set-up and the slow paths). */
  decodeFrame(data: Buffer, each: (m: Incoming) => void): void {
    if (this.protocol === 'json') {
      const text = data.toString('utf8');
      for (const record of text.split(RS)) if (record) each(parseJsonRecord(record));
    } else {
      for (const body of binaryMessages(data)) each(parseMsgpackMessage(body));
    }
  }

  send(frame: string | Buffer): void {
    this.ws.send(frame);
  }

  /** Sends a frame from `wireFrame` (the hot path: masked once, sent many times). */
  sendWire(frame: Buffer): void {
    this.ws.sendFrame(frame);
  }

  /** A blocking invocation: resolves with its completion (error text, if any). */
  invoke(target: string, args: unknown[], timeoutMs = 10_000): Promise<Incoming> {
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.completions.delete(id);
        reject(new Error(`${target}: no completion within ${timeoutMs} ms`));
      }, timeoutMs);
      this.completions.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      this.send(invocationFrame(this.protocol, target, args, id));
    });
  }

  /** Hands a completion to its waiter; other messages go to `onMessage`. */
  dispatch(m: Incoming): void {
    if (m.type === 3 && m.invocationId && this.completions.has(m.invocationId)) {
      const done = this.completions.get(m.invocationId)!;
      this.completions.delete(m.invocationId);
      done(m);
      return;
    }
    this.onMessage(m);
  }

  close(): void {
    this.ws.terminate();
  }
}

/** A hub frame as the WebSocket layer sends it, built once for sending many times. */
export function wireFrame(frame: string | Buffer): Buffer {
  return encodeClientFrame(frame);
}

/** A device's SendAudioData frames for `packets` (Base64), one per packet, ready for the wire. */
export function audioFrames(protocol: Protocol, sessionId: string, packets: readonly string[]): Buffer[] {
  return packets.map((p) => wireFrame(invocationFrame(protocol, 'SendAudioData', [sessionId, protocol === 'json' ? p : Buffer.from(p, 'base64')])));
}

/** Joins a session; throws with the hub's Error text when refused. */
export async function joinSession(client: RawHubClient, sessionId: string, deviceToken: string): Promise<void> {
  let refused: string | undefined;
  const previous = client.onMessage;
  client.onMessage = (m) => {
    if (m.target === 'Error') refused = String(m.args?.[0]);
  };
  try {
    const completion = await client.invoke('JoinSession', [sessionId, deviceToken]);
    if (completion.error) throw new Error(`JoinSession failed: ${completion.error}`);
    if (refused) throw new Error(`JoinSession refused: ${refused}`);
  } finally {
    client.onMessage = previous;
  }
}
