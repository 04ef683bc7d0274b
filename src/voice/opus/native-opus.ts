// The system's libopus through our addon (src/native/opus-decode.c): opened once per process from
// VoiceService.OpusLibrary, then used by the decoder pool (decoder-pool.ts) inline or on the addon's own
// decoder threads. Sessions are slots, small integers handed out here and reused, since the addon keeps
// each table of decoder states as an array.
import { createRequire } from 'node:module';
import { opusAddonFileName } from '../../runtime/asset-manifest.mjs';
import { assetFile } from '../../runtime/assets.js';
import { errorText } from '../../errors.js';
import { corruptPacket, libopusErrorText } from './decoder.js';

/** One thread's answer, as the addon delivers it: (status, offset, bytes) per job, and the PCM. */
type NativeDelivery = (thread: number, results: ArrayBuffer, pcm: ArrayBuffer) => void;

interface OpusAddon {
  load(file: string): string;
  openInline(slot: number, sampleRate: number, channels: number): number;
  closeInline(slot: number): void;
  decodeInline(slot: number, packet: Uint8Array, maxBytesPerChannel: number): Buffer | number;
  createPool(threads: number, maxBytesPerChannel: number, deliver: NativeDelivery): NativePoolHandle;
  submit(pool: NativePoolHandle, thread: number, jobs: Int32Array, packets: Uint8Array): void;
  setWaiting(pool: NativePoolHandle, waiting: boolean): void;
  stopPool(pool: NativePoolHandle): void;
}

/** The addon's handle of a pool of decoder threads. */
export type NativePoolHandle = { readonly __nativePool: unique symbol };

/** The offset of an open job's result, which has no PCM: how its failure is told from a decode's. */
export const OPEN_OFFSET = -1;

/** Job statuses of the addon besides libopus' own negative codes; 1 is success. */
export const NativeStatus = { Ok: 1, NoSamples: 0, Empty: -100, TooLarge: -101, NoDecoder: -102, NoMemory: -103, Refused: -104 } as const;

export interface NativeOpus {
  readonly addon: OpusAddon;
  /** libopus' own version string, for the log. */
  readonly version: string;
  readonly file: string;
}

let loaded: { library: string; result: NativeOpus | Error } | undefined;

/**
 * The addon with `library` opened (a name the dynamic loader finds, or a path), or the Error saying why
 * not: a missing addon in this build, or no such library on this machine. Loaded once per process: the
 * first library asked for is the one used.
 */
export function loadNativeOpus(library: string, bundleDir?: string): NativeOpus | Error {
  if (loaded) {
    if (loaded.library === library) return loaded.result;
    return new Error(`libopus is already loaded from ${loaded.library} in this process`);
  }
  let result: NativeOpus | Error;
  try {
    const file = assetFile(`native/${opusAddonFileName(process.arch)}`, bundleDir);
    const addon = createRequire(file)(file) as OpusAddon;
    result = { addon, version: addon.load(library), file };
  } catch (e) {
    result = new Error(errorText(e).split('\n')[0]!);
  }
  loaded = { library, result };
  return result;
}

/** Small integers for decoder states, each reused once released (the addon's tables are arrays). */
export class SlotNumbers {
  private next = 0;
  private readonly free: number[] = [];

  take(): number {
    return this.free.pop() ?? this.next++;
  }

  release(slot: number): void {
    this.free.push(slot);
  }
}

/** The numbers of the addon's inline decoder states (one table per process, used from the event loop). */
export const inlineSlots = new SlotNumbers();

/** Why a decode job failed, from its status, in the words of the wasm decoder's errors. */
export function decodeFailureText(status: number): string {
  switch (status) {
    case NativeStatus.NoDecoder: return 'no decoder for this session on this thread';
    case NativeStatus.NoMemory: return 'out of memory';
    case NativeStatus.Refused: return 'refused';
    // Packets are checked before they are sent (packetProblem): these two are the addon's own guard.
    case NativeStatus.Empty: return 'empty Opus packet';
    case NativeStatus.TooLarge: return 'Opus packet too large';
    default: return corruptPacket(status).message;
  }
}

/** Why an open job failed, from its status. */
export function openFailureText(status: number): string {
  return status === NativeStatus.NoMemory ? 'out of memory' : libopusErrorText(status);
}
