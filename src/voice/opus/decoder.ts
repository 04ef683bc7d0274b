// One Opus decoder per voice session over `opus-decoder` (libopus in wasm), with its traps handled:
// it silently falls back to 48 kHz stereo when options are missing or unknown, decodes an empty packet as
// 120 ms of packet-loss concealment, writes past its input buffer on oversized packets, must not be used
// after it is freed, and prints every bad packet with console.error (which would flood the journal).
// The session's state lives in the wasm instance its decoding context shares (opus-wasm.ts) and packets
// are decoded through the instance's export directly, which neither logs nor copies.
import { DomainError } from '../../errors.js';
import { isOpusSampleRate, OPUS_SAMPLE_RATES, type OpusSampleRate } from '../../opus-format.js';
import { createOpusState, destroyOpusState, MAX_PACKET_BYTES_PER_CHANNEL, type OpusState } from './opus-wasm.js';
import { newSoftClipMemory, toInt16Pcm, type PcmAlloc, type SoftClipMemory } from './pcm.js';

// The decoder's callers take the format facts from here, with the decoder they describe.
export { isOpusSampleRate, MAX_PACKET_BYTES_PER_CHANNEL, OPUS_SAMPLE_RATES, type OpusSampleRate };

export type DecoderState = 'Unconfigured' | 'Configuring' | 'Ready' | 'Freed';

export function checkFormat(sampleRate: number, channels: number): void {
  if (!isOpusSampleRate(sampleRate)) {
    throw new DomainError('invalid_argument', `unsupported Opus sample rate ${sampleRate}: use one of ${OPUS_SAMPLE_RATES.join(', ')}`);
  }
  if (channels !== 1 && channels !== 2) {
    throw new DomainError('invalid_argument', `unsupported channel count ${channels}: use 1 or 2`);
  }
}

/**
 * What every decoder's reconfigure() checks first: a freed decoder is refused, a format checked; false
 * when the decoder already decodes this format (nothing to do).
 */
export function needsReconfigure(decoder: { readonly state: DecoderState; matches(sampleRate: number, channels: number): boolean }, sampleRate: number, channels: number): boolean {
  if (decoder.state === 'Freed') throw new DomainError('unavailable', 'Opus decoder has been freed');
  checkFormat(sampleRate, channels);
  return !decoder.matches(sampleRate, channels);
}

/**
 * Why a packet of `length` bytes is not decoded for a decoder of `channels`, or undefined: checked before
 * any decoder (wasm or native, inline or on a thread) sees it.
 */
export function packetProblem(length: number, channels: number): DomainError | undefined {
  // libopus treats an empty packet as a lost one and conceals 120 ms: never what a caller meant.
  if (length === 0) return new DomainError('invalid_argument', 'empty Opus packet');
  // The wasm decoder's input buffer holds no more; the native one is held to the same limit.
  const limit = MAX_PACKET_BYTES_PER_CHANNEL * channels;
  if (length > limit) return new DomainError('invalid_argument', `Opus packet of ${length} bytes exceeds ${limit} bytes`);
  return undefined;
}

/** A packet libopus decoded to `samples` <= 0: its error code (negative), or nothing at all. */
export function corruptPacket(samples: number): DomainError {
  const reason = samples < 0 ? libopusErrorText(samples) : 'no samples decoded';
  return new DomainError('invalid_argument', `corrupt Opus packet: ${reason}`);
}

export class SessionOpusDecoder {
  private decoder: OpusState | undefined;
  private stateValue: DecoderState = 'Unconfigured';
  private rate = 0;
  private channelCount = 0;
  private clipMemory: SoftClipMemory = newSoftClipMemory();
  /** Bumped by every (re)configure so a slow, superseded initialisation does not win. */
  private generation = 0;

  /** A state whose wasm instance broke (OpusTrapError) is gone: Unconfigured, so its owner rebuilds it. */
  get state(): DecoderState {
    return this.stateValue === 'Ready' && this.decoder?.instance.broken ? 'Unconfigured' : this.stateValue;
  }
  get sampleRate(): number { return this.rate; }
  get channels(): number { return this.channelCount; }

  /** True when decode() would produce PCM at this rate and channel count without reconfiguring. */
  matches(sampleRate: number, channels: number): boolean {
    return this.state === 'Ready' && this.rate === sampleRate && this.channelCount === channels;
  }

  /** Initialises (or re-initialises) the decoder for a rate and channel count; resolves once usable. */
  async reconfigure(sampleRate: number, channels: number): Promise<void> {
    if (!needsReconfigure(this, sampleRate, channels)) return;
    const generation = ++this.generation;
    this.release();
    this.stateValue = 'Configuring';
    let decoder: OpusState;
    try {
      decoder = await createOpusState(sampleRate as OpusSampleRate, channels as 1 | 2);
    } catch (e) {
      if (generation === this.generation) this.stateValue = 'Unconfigured';
      throw e;
    }
    // free() or another reconfigure() happened while this one was waiting for a wasm instance.
    if (generation !== this.generation || this.stateValue !== 'Configuring') {
      destroyOpusState(decoder);
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
    const state = this.state;
    if (state !== 'Ready' || !decoder) {
      throw new DomainError('unavailable', `Opus decoder is not ready (${state})`);
    }
    const problem = packetProblem(packet.length, this.channelCount);
    if (problem) throw problem;
    const samples = decoder.instance.decode(decoder.ptr, packet);
    if (samples <= 0) throw corruptPacket(samples);
    // The output is planar (channel c at c * samples); views, not copies, of the instance's shared
    // output buffer, converted before any other session of this context decodes.
    const out = decoder.instance.decoded;
    const planes = this.channelCount === 1 ? [out.subarray(0, samples)] : [out.subarray(0, samples), out.subarray(samples, 2 * samples)];
    return toInt16Pcm(planes, samples, this.clipMemory, alloc);
  }

  /** Frees the session's state in the wasm instance. Idempotent; the decoder cannot be used afterwards. */
  free(): void {
    if (this.stateValue === 'Freed') return;
    this.generation++;
    this.release();
    this.stateValue = 'Freed';
  }

  private release(): void {
    const decoder = this.decoder;
    this.decoder = undefined;
    if (decoder) destroyOpusState(decoder);
  }
}

/** A libopus error code (negative) with its name and meaning. */
export function libopusErrorText(code: number): string {
  return `libopus ${code} ${LIBOPUS_ERRORS.get(code) ?? 'Unknown Error'}`;
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
