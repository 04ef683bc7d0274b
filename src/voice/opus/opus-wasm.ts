// The libopus wasm instances of one decoding context (the event loop, or one decoder thread), holding the
// decoder state of every session decoded there. opus-decoder's own OpusDecoder gives each decoder a wasm
// instance of its own: a linear memory that reserves 28 MiB of address space and grows to ~130 KiB resident
// after a few packets, per session (a 32-bit armv7 process runs out of address space near a hundred of
// them). Here an instance holds many sessions' states (18-27 KiB each), created and destroyed through its
// exports, and one input and one output buffer that all of them share: decoding is synchronous within a
// context, so no two packets ever need them at once. Module state is per thread, so each decoder thread
// gets its own context simply by importing this file.
//
// The package's wasm cannot grow its memory (its resize hook refuses): an instance's 28 MiB hold about
// 1,500 mono states (18.1 KiB each, libopus' own state) or 1,000 stereo ones (26.7 KiB). Near that limit
// its create export is not safe: once the state's own allocations fail it still hands back a pointer to
// a half-built decoder. So an instance takes states only up to STATE_BUDGET_BYTES, well short of its
// memory (room for the allocator's fragmentation after many opens and closes of both sizes, and for the
// scratch buffer each create allocates for a moment); the next session's state goes to another
// instance, opened on demand, and an extra instance that holds no state any more is dropped.
//
// The package's libopus can trap on hostile input: three packets (CELT, then SILK, then hybrid, at
// 48 kHz) end a decode with "memory access out of bounds", and from then on every call into that
// instance traps too, creating a state included. Sharing an instance, one session's packets would
// break every session of the context and every session started after it. So an instance that traps is
// broken for good (OpusTrapError): it is dropped from the context at once, its states read as gone
// (SessionOpusDecoder rebuilds its decoder on another instance) and nothing calls into it again.
//
// What breaks it comes before the trap, without one: the wasm's stack is Emscripten's default 64 KiB,
// from STACK_TOP down to STACK_END, and below it lie libopus' tables and the runtime's static data.
// Decoding 48 kHz takes it down to 3.5 KiB from its end (measured), and some packets run it past its
// end (the second of those three, 120 ms of SILK after CELT, 4 KiB past; about one random 48 kHz packet
// in 500, mono or stereo), writing over the tables: every session of the instance then decodes with
// corrupt tables (libopus errors such as OPUS_INVALID_PACKET, traps such as "divide by zero"), the
// packet that did it decoded as if nothing happened. A frame may skip the stack's lowest bytes and write
// below them, so a guard at the stack's end alone misses some: everything below the stack's end, and
// its lowest GUARD_BYTES (filled with a pattern), is compared with a copy after every decode (a memcmp
// of ~30 KiB, ~1 us), and a decode that changed any of it breaks the instance as a trap does. Decoding
// never writes there (measured: thousands of packets of every rate, valid and random); creating and
// freeing a state do (the allocator's own data), so the copy is taken anew after each.
import { DomainError, errorText } from '../../errors.js';
import type { OpusSampleRate } from '../../opus-format.js';

/** opus-decoder's input buffer holds 3,840 bytes per channel (120 ms at 256 kbit/s). */
export const MAX_PACKET_BYTES_PER_CHANNEL = 3840;
const MAX_CHANNELS = 2;
/** libopus' longest frame: 120 ms at 48 kHz, per channel. */
const MAX_SAMPLES_PER_CHANNEL = 5760;
const FAMILY_0_MAPPING = [0, 1];
/**
 * The state the create export returns is a struct of 32-bit fields; field 1 is its channel count and
 * field 5 its interleaved scratch buffer: libopus decodes into it and the decode export deinterleaves
 * from it into the output, within one call. Each state gets one of its own (120 ms of float samples,
 * 22.5 KiB mono, 45 KiB stereo: more than libopus' state itself), which the destroy export never frees.
 * Here it is freed right after create and the field points at the instance's one scratch buffer,
 * which is enough for every state of the instance since decoding is synchronous within a context.
 */
const STATE_CHANNELS_FIELD = 1;
const STATE_SCRATCH_FIELD = 5;
/**
 * opus-decoder 0.7.12's wasm (pinned exactly): its __stack_pointer starts at 95,616, where the heap
 * begins, and its static data (libopus' tables) runs from 1,024 to 28,711 with the runtime's zeroed
 * data after it. A new instance proves the heap is where it should be (OpusInstance).
 */
const STACK_TOP = 95616;
const STACK_END = STACK_TOP - 64 * 1024;
/** The stack's lowest bytes that no decode reaches (the deepest measured stopped 3.5 KiB above its end). */
const GUARD_BYTES = 1024;
const GUARD_BYTE = 0xa5;
/** What a decode must leave as it was: everything below the stack's end, and the guard (see above). */
const KEPT_BYTES = STACK_END + GUARD_BYTES;

/** What one decoder state takes of an instance's memory, by channel count (measured, rounded up). */
const STATE_BYTES = [0, 19 * 1024, 28 * 1024] as const;
/** The states' share of an instance's 28 MiB: see above for why not more. */
const STATE_BUDGET_BYTES = 16 * 1024 * 1024;

/** How many states of a channel count one instance takes. */
export function statesPerInstance(channels: 1 | 2): number {
  return Math.floor(STATE_BUDGET_BYTES / STATE_BYTES[channels]);
}

/**
 * A call into an instance ended in a wasm trap: the instance is broken (see above). Thrown for the call
 * that trapped; the decoder states of that instance are gone with it.
 */
export class OpusTrapError extends DomainError {
  constructor(trap: unknown) {
    super('unavailable', `the wasm Opus decoder failed (${errorText(trap)}); its decoders are rebuilt`, undefined, trap);
    this.name = 'OpusTrapError';
  }
}

/** The exports of opus-decoder 0.7.12's wasm module (pinned exactly) that decoding needs. */
interface OpusExports {
  HEAP: ArrayBuffer;
  malloc(bytes: number): number;
  free(ptr: number): void;
  opus_frame_decoder_create(rate: number, channels: number, streams: number, coupled: number, mapping: number, preSkip: number, forceStereo: number): number;
  opus_frame_decode_float_deinterleaved(state: number, input: number, length: number, output: number): number;
  opus_frame_decoder_destroy(state: number): void;
}

/** A session's decoder state: where it lives, and its address there. */
export interface OpusState {
  readonly instance: OpusInstance;
  readonly ptr: number;
}

export class OpusInstance {
  /** Decoder states alive in this instance, and the memory they take (by STATE_BYTES). */
  states = 0;
  private stateBytes = 0;
  /** Set when the memory had no room for a state (never expected within STATE_BUDGET_BYTES). */
  private outOfMemory = false;
  /** Set once a call into the instance trapped: its states are gone and it is never called again. */
  broken = false;
  private readonly input: Uint8Array;
  private readonly output: Float32Array;
  private readonly inputPtr: number;
  private readonly outputPtr: number;
  /** The scratch buffer every state of this instance decodes through (see STATE_SCRATCH_FIELD). */
  private readonly scratchPtr: number;
  /** The channel mapping of family 0 ([0] mono, [0, 1] stereo), written anew before every create. */
  private readonly mappingPtr: number;
  private readonly mapping: Uint8Array;
  private readonly heap32: Int32Array;
  /** The memory no decode may change (KEPT_BYTES), and what it held before the decode. */
  private readonly kept: Buffer;
  private readonly keptCopy = Buffer.allocUnsafe(KEPT_BYTES);

  constructor(private readonly wasm: OpusExports) {
    this.inputPtr = this.alloc(MAX_PACKET_BYTES_PER_CHANNEL * MAX_CHANNELS);
    this.outputPtr = this.alloc(MAX_SAMPLES_PER_CHANNEL * MAX_CHANNELS * Float32Array.BYTES_PER_ELEMENT);
    this.mappingPtr = this.alloc(MAX_CHANNELS);
    this.scratchPtr = this.alloc(MAX_SAMPLES_PER_CHANNEL * MAX_CHANNELS * Float32Array.BYTES_PER_ELEMENT);
    this.input = new Uint8Array(wasm.HEAP, this.inputPtr, MAX_PACKET_BYTES_PER_CHANNEL * MAX_CHANNELS);
    this.output = new Float32Array(wasm.HEAP, this.outputPtr, MAX_SAMPLES_PER_CHANNEL * MAX_CHANNELS);
    this.mapping = new Uint8Array(wasm.HEAP, this.mappingPtr, MAX_CHANNELS);
    this.heap32 = new Int32Array(wasm.HEAP);
    if (this.inputPtr < STACK_TOP) throw new Error('opus-decoder\'s heap does not start above the stack where this service guards it (version other than 0.7.12?)');
    new Uint8Array(wasm.HEAP, STACK_END, GUARD_BYTES).fill(GUARD_BYTE);
    this.kept = Buffer.from(wasm.HEAP, 0, KEPT_BYTES);
    this.kept.copy(this.keptCopy);
  }

  /** False when no state of this channel count may be created here. */
  hasRoom(channels: 1 | 2): boolean {
    return !this.broken && !this.outOfMemory && this.stateBytes + STATE_BYTES[channels] <= STATE_BUDGET_BYTES;
  }

  /** A new decoder state, or 0 when this instance has no room for one. */
  create(sampleRate: OpusSampleRate, channels: 1 | 2): number {
    if (!this.hasRoom(channels)) return 0;
    // The create export overwrites the mapping it is given (a stereo state left [0, 0] behind, and
    // the next stereo state decoded its right channel from the left stream).
    this.mapping.set(FAMILY_0_MAPPING);
    const ptr = this.guarded(() => this.wasm.opus_frame_decoder_create(sampleRate, channels, 1, channels - 1, this.mappingPtr, 0, 0));
    if (ptr === 0) {
      this.outOfMemory = true;
      return 0;
    }
    const fields = ptr >> 2;
    if (this.heap32[fields + STATE_CHANNELS_FIELD] !== channels || this.heap32[fields + STATE_SCRATCH_FIELD] === 0) {
      // Not the layout destroy() relies on: leave it (a leak) rather than free something else.
      throw new DomainError('unavailable', 'Opus decoder could not be initialised: opus-decoder\'s decoder state does not have the layout this service frees (version other than 0.7.12?)');
    }
    this.wasm.free(this.heap32[fields + STATE_SCRATCH_FIELD]!);
    this.heap32[fields + STATE_SCRATCH_FIELD] = this.scratchPtr;
    this.kept.copy(this.keptCopy);
    this.states++;
    this.stateBytes += STATE_BYTES[channels];
    return ptr;
  }

  /** Frees a state with everything it allocated (its own scratch buffer went at create); a broken instance is only counted down. */
  destroy(ptr: number): void {
    const channels = this.heap32[(ptr >> 2) + STATE_CHANNELS_FIELD] as 1 | 2;
    this.states--;
    if (this.broken) return;
    try {
      this.guarded(() => this.wasm.opus_frame_decoder_destroy(ptr));
      this.kept.copy(this.keptCopy);
    } catch {
      // The instance broke (and left the context) with the state in it: nothing more to free, and a
      // session ending must not fail on it.
      return;
    }
    this.stateBytes -= STATE_BYTES[channels];
    this.outOfMemory = false;
  }

  /**
   * Decodes one packet (already checked against MAX_PACKET_BYTES_PER_CHANNEL) with a state of this
   * instance. Returns the samples per channel (libopus' negative error code on failure); the planar
   * output (channel c at c * samples) is in `decoded` until the next decode in this instance.
   */
  decode(ptr: number, packet: Uint8Array): number {
    this.input.set(packet);
    const samples = this.guarded(() => this.wasm.opus_frame_decode_float_deinterleaved(ptr, this.inputPtr, packet.length, this.outputPtr));
    if (!this.kept.equals(this.keptCopy)) throw this.fail(new Error('its stack overflowed'));
    return samples;
  }

  /** A call into the instance; a trap breaks it for good and leaves the context (OpusTrapError). */
  private guarded<T>(call: () => T): T {
    if (this.broken) throw new DomainError('unavailable', 'the wasm Opus decoder of this state failed earlier');
    try {
      return call();
    } catch (e) {
      // A trap, or anything else that unwound a call midway: the C stack pointer and the allocator's
      // state are left as they were at that moment, so no call into the instance is safe any more.
      throw this.fail(e);
    }
  }

  private fail(cause: unknown): OpusTrapError {
    this.broken = true;
    const at = instances.indexOf(this);
    if (at >= 0) instances.splice(at, 1);
    return new OpusTrapError(cause);
  }

  get decoded(): Float32Array { return this.output; }

  private alloc(bytes: number): number {
    const ptr = this.wasm.malloc(bytes);
    if (ptr === 0) throw new Error(`a new Opus wasm instance has no room for ${bytes} bytes`);
    return ptr;
  }
}

/** The instances of this thread's context; the first is kept for the life of the thread (unless it breaks). */
const instances: OpusInstance[] = [];
let opening: Promise<OpusInstance> | undefined;

/** A decoder state in this context's first instance with room, opening a new instance if none has. */
export async function createOpusState(sampleRate: OpusSampleRate, channels: 1 | 2): Promise<OpusState> {
  for (;;) {
    const instance = instances.find((i) => i.hasRoom(channels)) ?? await openInstance();
    const ptr = instance.create(sampleRate, channels);
    if (ptr !== 0) return { instance, ptr };
    // Full (create() marked it so): the next round takes, or opens, another.
    if (instance.states === 0) throw new DomainError('unavailable', 'Opus decoder could not be initialised: a fresh wasm instance cannot hold a decoder');
  }
}

/** Frees a state; an instance other than the first is dropped once it holds none. */
export function destroyOpusState(state: OpusState): void {
  const { instance } = state;
  instance.destroy(state.ptr);
  const at = instances.indexOf(instance);
  if (instance.states === 0 && at > 0) instances.splice(at, 1);
}

/** How many wasm instances this context holds (tests and diagnostics). */
export function opusInstanceCount(): number {
  return instances.length;
}

/** Opens one instance at a time: sessions that find every instance full at once share the next. */
function openInstance(): Promise<OpusInstance> {
  opening ??= instantiate().finally(() => { opening = undefined; });
  return opening;
}

async function instantiate(): Promise<OpusInstance> {
  // OpusDecoder is the package's only way in to its wasm module (its exports map hides the rest): its
  // instance is kept, and the decoder state and buffers it made for itself are freed at once. Imported
  // here, by the first wasm decoder, since the system libopus usually decodes and this is its fallback.
  const { OpusDecoder } = await import('opus-decoder');
  const bootstrap = new OpusDecoder({ sampleRate: 48000, channels: 2 });
  let wasm: OpusExports;
  try {
    await bootstrap.ready;
    const internals = bootstrap as unknown as { _decoder?: unknown; _common?: { wasm?: Partial<OpusExports>; free?: () => void } };
    wasm = checkExports(internals._common?.wasm);
    internals._common!.free!();
    const state = internals._decoder as number;
    const scratch = new Int32Array(wasm.HEAP)[(state >> 2) + STATE_SCRATCH_FIELD]!;
    wasm.opus_frame_decoder_destroy(state);
    wasm.free(scratch);
  } catch (e) {
    throw new DomainError('unavailable', `Opus decoder could not be initialised: ${errorText(e)}`);
  }
  const instance = new OpusInstance(wasm);
  instances.push(instance);
  return instance;
}

/** Proves the shape once per instance, so another version of the package fails at start, not per packet. */
function checkExports(wasm: Partial<OpusExports> | undefined): OpusExports {
  const ok = wasm !== undefined && wasm.HEAP instanceof ArrayBuffer && typeof wasm.malloc === 'function' && typeof wasm.free === 'function'
    && typeof wasm.opus_frame_decoder_create === 'function' && typeof wasm.opus_frame_decode_float_deinterleaved === 'function'
    && typeof wasm.opus_frame_decoder_destroy === 'function';
  if (!ok) throw new Error('opus-decoder does not have the wasm exports this service decodes through (version other than 0.7.12?)');
  return wasm as OpusExports;
}
