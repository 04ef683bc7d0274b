// A session's decoder on the event loop (VoiceService.DecoderThreads 0): the bundled wasm libopus
// (SessionOpusDecoder), or the system libopus through our addon. Both answer within decode().
import { DomainError, errorText } from '../../errors.js';
import type { AudioDecoder, DecodeDone } from './decoder-pool.js';
import { corruptPacket, MAX_PACKET_BYTES_PER_CHANNEL, needsReconfigure, packetProblem, SessionOpusDecoder, type DecoderState } from './decoder.js';
import { inlineSlots, openFailureText, type NativeOpus } from './native-opus.js';

export class InlineWasmDecoder implements AudioDecoder {
  private readonly decoder = new SessionOpusDecoder();

  get state(): DecoderState { return this.decoder.state; }

  matches(sampleRate: number, channels: number): boolean {
    return this.decoder.matches(sampleRate, channels);
  }

  reconfigure(sampleRate: number, channels: number): Promise<void> {
    return this.decoder.reconfigure(sampleRate, channels);
  }

  decode(packet: Uint8Array, done: DecodeDone): boolean {
    let pcm: Buffer;
    try {
      pcm = this.decoder.decode(packet);
    } catch (e) {
      done(e instanceof Error ? e : new Error(errorText(e)), undefined);
      return true;
    }
    done(undefined, pcm);
    return true;
  }

  free(): void {
    this.decoder.free();
  }
}

/** libopus' opus_decode gives the int16 PCM itself (soft clipping included): no conversion here. */
export class InlineNativeDecoder implements AudioDecoder {
  private stateValue: DecoderState = 'Unconfigured';
  private rate = 0;
  private channelCount = 0;
  /** This decoder's state in the addon's inline table, once opened. */
  private slot: number | undefined;

  constructor(private readonly native: NativeOpus) {}

  get state(): DecoderState { return this.stateValue; }

  matches(sampleRate: number, channels: number): boolean {
    return this.stateValue === 'Ready' && this.rate === sampleRate && this.channelCount === channels;
  }

  async reconfigure(sampleRate: number, channels: number): Promise<void> {
    if (!needsReconfigure(this, sampleRate, channels)) return;
    this.slot ??= inlineSlots.take();
    // Opening a slot replaces the state it held: the old format's decoder goes with it.
    const status = this.native.addon.openInline(this.slot, sampleRate, channels);
    if (status !== 1) {
      this.stateValue = 'Unconfigured';
      throw new DomainError('unavailable', `Opus decoder could not be initialised: ${openFailureText(status)}`);
    }
    this.rate = sampleRate;
    this.channelCount = channels;
    this.stateValue = 'Ready';
  }

  decode(packet: Uint8Array, done: DecodeDone): boolean {
    if (this.stateValue !== 'Ready' || this.slot === undefined) {
      done(new DomainError('unavailable', `Opus decoder is not ready (${this.stateValue})`), undefined);
      return true;
    }
    const problem = packetProblem(packet.length, this.channelCount);
    if (problem) {
      done(problem, undefined);
      return true;
    }
    const pcm = this.native.addon.decodeInline(this.slot, packet, MAX_PACKET_BYTES_PER_CHANNEL);
    if (typeof pcm === 'number') done(corruptPacket(pcm), undefined);
    else done(undefined, pcm);
    return true;
  }

  free(): void {
    if (this.stateValue === 'Freed') return;
    this.stateValue = 'Freed';
    if (this.slot === undefined) return;
    this.native.addon.closeInline(this.slot);
    inlineSlots.release(this.slot);
    this.slot = undefined;
  }
}
