// One Opus decoder per voice session over `opus-decoder` (libopus in wasm), with its traps handled:
// it silently falls back to 48 kHz stereo when options are missing or unknown, decodes an empty packet as
// 120 ms of packet-loss concealment, writes past its input buffer on oversized packets, must not be used
// after free(), and prints every bad packet with console.error (which would flood the journal).
import { OpusDecoder } from 'opus-decoder';
import { DomainError, errorText } from '../../errors.js';
import { isOpusSampleRate, OPUS_SAMPLE_RATES, type OpusSampleRate } from '../../opus-format.js';
import { newSoftClipMemory, toInt16Pcm, type SoftClipMemory } from './pcm.js';

// The decoder's callers take the format facts from here, with the decoder they describe.
export { isOpusSampleRate, OPUS_SAMPLE_RATES, type OpusSampleRate };

/** opus-decoder's input buffer holds 3,840 bytes per channel (120 ms at 256 kbit/s). */
export const MAX_PACKET_BYTES_PER_CHANNEL = 3840;

export type DecoderState = 'Unconfigured' | 'Configuring' | 'Ready' | 'Freed';

function checkFormat(sampleRate: number, channels: number): void {
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
    } catch (e) {
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

  /** Decodes one Opus packet to 16-bit little-endian interleaved PCM. */
  decode(packet: Uint8Array): Buffer {
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
    const decoded = quietly(() => decoder.decodeFrame(packet));
    const failure = decoded.errors[0];
    if (failure || decoded.samplesDecoded === 0) {
      throw new DomainError('invalid_argument', `corrupt Opus packet: ${failure?.message ?? 'no samples decoded'}`);
    }
    return toInt16Pcm(decoded.channelData, decoded.samplesDecoded, this.clipMemory);
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
 * Runs a synchronous decode with console.error silenced: opus-decoder reports each bad packet there as
 * well as in its result, and the result is what we act on. Synchronous, so nothing else can log meanwhile.
 */
function quietly<T>(decode: () => T): T {
  const original = console.error;
  console.error = () => {};
  try {
    return decode();
  } finally {
    console.error = original;
  }
}
