// One Opus decoder per voice session over `opus-decoder` (libopus in wasm), with its traps handled:
// it silently falls back to 48 kHz stereo when options are missing or unknown, decodes an empty packet as
// 120 ms of packet-loss concealment, writes past its input buffer on oversized packets, must not be used
// after free(), and prints every bad packet with console.error (which would flood the journal): packets are
// therefore decoded through its wasm export directly (see OpusInternals), which neither logs nor copies.
import { OpusDecoder } from 'opus-decoder';
import { DomainError, errorText } from '../../errors.js';
import { isOpusSampleRate, OPUS_SAMPLE_RATES, type OpusSampleRate } from '../../opus-format.js';
import { newSoftClipMemory, toInt16Pcm, type PcmAlloc, type SoftClipMemory } from './pcm.js';

// The decoder's callers take the format facts from here, with the decoder they describe.
export { isOpusSampleRate, OPUS_SAMPLE_RATES, type OpusSampleRate };

/** opus-decoder's input buffer holds 3,840 bytes per channel (120 ms at 256 kbit/s). */
export const MAX_PACKET_BYTES_PER_CHANNEL = 3840;

export type DecoderState = 'Unconfigured' | 'Configuring' | 'Ready' | 'Freed';

export function checkFormat(sampleRate: number, channels: number): void {
  if (!isOpusSampleRate(sampleRate)) {
    throw new DomainError('invalid_argument', `unsupported Opus sample rate ${sampleRate}: use one of ${OPUS_SAMPLE_RATES.join(', ')}`);
  }
  if (channels !== 1 && channels !== 2) {
    throw new DomainError('invalid_argument', `unsupported channel count ${channels}: use 1 or 2`);
  }
}

export class SessionOpusDecoder {
  private decoder: OpusDecoder<OpusSampleRate> | undefined;
  private stateValue: DecoderState = 'Unconfigured';
  private rate = 0;
  private channelCount = 0;
  private clipMemory: SoftClipMemory = newSoftClipMemory();
  /** Bumped by every (re)configure so a slow, superseded initialisation does not win. */
  private generation = 0;

  get state(): DecoderState { return this.stateValue; }
  get sampleRate(): number { return this.rate; }
  get channels(): number { return this.channelCount; }

  /** True when decode() would produce PCM at this rate and channel count without reconfiguring. */
  matches(sampleRate: number, channels: number): boolean {
    return this.stateValue === 'Ready' && this.rate === sampleRate && this.channelCount === channels;
  }

  /** Initialises (or re-initialises) the decoder for a rate and channel count; resolves once usable. */
  async reconfigure(sampleRate: number, channels: number): Promise<void> {
    if (this.stateValue === 'Freed') throw new DomainError('unavailable', 'Opus decoder has been freed');
    checkFormat(sampleRate, channels);
    if (this.matches(sampleRate, channels)) return;
    const generation = ++this.generation;
    this.release();
    this.stateValue = 'Configuring';
    // Both options always: without them opus-decoder decodes at 48 kHz stereo.
    const decoder = new OpusDecoder({ sampleRate: sampleRate as OpusSampleRate, channels });
    try {
      await decoder.ready;
      checkInternals(decoder);
    } catch (e) {
      try { decoder.free(); } catch { /* it never became usable; what failed is reported below */ }
      if (generation === this.generation) this.stateValue = 'Unconfigured';
      throw new DomainError('unavailable', `Opus decoder could not be initialised: ${errorText(e)}`);
    }
    // free() or another reconfigure() happened while this one was initialising.
    if (generation !== this.generation || this.stateValue !== 'Configuring') {
      decoder.free();
      return;
    }
    this.decoder = decoder;
    this.rate = sampleRate;
    this.channelCount = channels;
    this.clipMemory = newSoftClipMemory();
    this.stateValue = 'Ready';
  }

  /** Decodes one Opus packet to 16-bit little-endian interleaved PCM (in memory from `alloc`, if given). */
  decode(packet: Uint8Array, alloc?: PcmAlloc): Buffer {
    const decoder = this.decoder;
    if (this.stateValue !== 'Ready' || !decoder) {
      throw new DomainError('unavailable', `Opus decoder is not ready (${this.stateValue})`);
    }
    if (packet.length === 0) {
      // libopus treats an empty packet as a lost one and conceals 120 ms: never what a caller meant.
      throw new DomainError('invalid_argument', 'empty Opus packet');
    }
    const limit = MAX_PACKET_BYTES_PER_CHANNEL * this.channelCount;
    if (packet.length > limit) {
      throw new DomainError('invalid_argument', `Opus packet of ${packet.length} bytes exceeds ${limit} bytes`);
    }
    const internals = decoder as unknown as OpusInternals;
    internals._input.buf.set(packet);
    const samples = internals._common.wasm.opus_frame_decode_float_deinterleaved(
      internals._decoder, internals._input.ptr, packet.length, internals._output.ptr,
    );
    if (samples <= 0) {
      const reason = samples < 0 ? `libopus ${samples} ${LIBOPUS_ERRORS.get(samples) ?? 'Unknown Error'}` : 'no samples decoded';
      throw new DomainError('invalid_argument', `corrupt Opus packet: ${reason}`);
    }
    // The output is planar (channel c at c * samples); views, not copies, of the decoder's own memory.
    const out = internals._output.buf;
    const planes = this.channelCount === 1 ? [out.subarray(0, samples)] : [out.subarray(0, samples), out.subarray(samples, 2 * samples)];
    return toInt16Pcm(planes, samples, this.clipMemory, alloc);
  }

  /** Releases the wasm memory. Idempotent; the decoder cannot be used afterwards. */
  free(): void {
    if (this.stateValue === 'Freed') return;
    this.generation++;
    this.release();
    this.stateValue = 'Freed';
  }

  private release(): void {
    const decoder = this.decoder;
    this.decoder = undefined;
    if (decoder) decoder.free();
  }
}

/**
 * What opus-decoder 0.7.12 (pinned exactly) keeps on a ready decoder: its decodeFrame() is this wasm call
 * wrapped in a console.error on failure, a copy of each channel and two result objects per packet; the
 * call alone is what a packet needs. checkInternals() proves the shape once per decoder, so a different
 * version of the package fails loudly at start rather than per packet.
 */
interface OpusInternals {
  _decoder: number;
  _input: { ptr: number; buf: Uint8Array };
  _output: { ptr: number; buf: Float32Array };
  _common: { wasm: { opus_frame_decode_float_deinterleaved(decoder: number, input: number, length: number, output: number): number } };
}

function checkInternals(decoder: unknown): void {
  const d = decoder as Partial<OpusInternals>;
  const ok = typeof d._decoder === 'number' && d._input?.buf instanceof Uint8Array && d._output?.buf instanceof Float32Array
    && typeof d._common?.wasm?.opus_frame_decode_float_deinterleaved === 'function';
  if (!ok) throw new Error('opus-decoder does not have the internals this service decodes through (version other than 0.7.12?)');
}

/** libopus' error codes (include/opus_defines.h), as opus-decoder names them. */
const LIBOPUS_ERRORS = new Map([
  [-1, 'OPUS_BAD_ARG: One or more invalid/out of range arguments'],
  [-2, 'OPUS_BUFFER_TOO_SMALL: Not enough bytes allocated in the buffer'],
  [-3, 'OPUS_INTERNAL_ERROR: An internal error was detected'],
  [-4, 'OPUS_INVALID_PACKET: The compressed data passed is corrupted'],
  [-5, 'OPUS_UNIMPLEMENTED: Invalid/unsupported request number'],
  [-6, 'OPUS_INVALID_STATE: An encoder or decoder structure is invalid or already freed'],
  [-7, 'OPUS_ALLOC_FAIL: Memory allocation has failed'],
]);
