// What the TOC byte of an Opus packet says (RFC 6716 section 3.1): its duration, and whether its framing is
// one a decoder can accept at all. Pure; used for the duration a forwarded packet carries and to refuse garbage
// before it is sent upstream.
import { DomainError } from '../../errors.js';

/** Frame duration in ms by TOC configuration number (RFC 6716 section 3.1, Table 2). */
function frameMs(config: number): number {
  if (config < 12) return [10, 20, 40, 60][config % 4]!; // SILK-only: NB, MB, WB
  if (config < 16) return [10, 20][config % 2]!;         // Hybrid: SWB, FB
  return [2.5, 5, 10, 20][config % 4]!;                  // CELT-only: NB, WB, SWB, FB
}

/** Largest compressed frame (RFC 6716 section 3.2.1, R2). */
const MAX_FRAME_BYTES = 1275;
/** A packet may carry at most 120 ms of audio (RFC 6716 section 3.2.5, R5). */
const MAX_PACKET_MS = 120;

export interface OpusPacketInfo {
  /** Number of frames in the packet (code 0: 1, codes 1 and 2: 2, code 3: M). */
  frames: number;
  frameMs: number;
  durationMs: number;
  stereo: boolean;
}

function invalid(reason: string): never {
  throw new DomainError('invalid_argument', `invalid Opus packet: ${reason}`);
}

/**
 * Reads the TOC byte (and, for codes 2 and 3, the byte after it) and checks the requirements of
 * RFC 6716 section 3.4 that can be checked without decoding: R1 (at least one byte), R2/R3 (code 0 and 1
 * frame sizes), R4 (code 2 length fits), R5 (code 3 frame count 1..120 ms), R6 (code 3 count byte present).
 * Throws DomainError('invalid_argument').
 */
export function inspectOpusPacket(packet: Uint8Array): OpusPacketInfo {
  if (packet.length === 0) invalid('empty packet');
  const toc = packet[0]!;
  const ms = frameMs(toc >> 3);
  const stereo = (toc & 0x04) !== 0;
  const code = toc & 0x03;
  const payload = packet.length - 1;
  let frames: number;
  switch (code) {
    case 0:
      if (payload > MAX_FRAME_BYTES) invalid(`frame of ${payload} bytes exceeds ${MAX_FRAME_BYTES}`);
      frames = 1;
      break;
    case 1:
      if (payload % 2 !== 0) invalid('code 1 packet with an odd payload length');
      if (payload / 2 > MAX_FRAME_BYTES) invalid(`frames of ${payload / 2} bytes exceed ${MAX_FRAME_BYTES}`);
      frames = 2;
      break;
    case 2: {
      if (payload < 1) invalid('code 2 packet without a frame length');
      const b1 = packet[1]!;
      let first = b1;
      let lengthBytes = 1;
      if (b1 >= 252) {
        if (payload < 2) invalid('code 2 packet with a truncated frame length');
        first = packet[2]! * 4 + b1;
        lengthBytes = 2;
      }
      if (first > payload - lengthBytes) invalid('code 2 first frame is longer than the packet');
      frames = 2;
      break;
    }
    default: {
      if (payload < 1) invalid('code 3 packet without a frame count byte');
      frames = packet[1]! & 0x3f;
      if (frames === 0) invalid('code 3 packet with zero frames');
      break;
    }
  }
  const durationMs = frames * ms;
  if (durationMs > MAX_PACKET_MS) invalid(`${frames} frames of ${ms} ms exceed ${MAX_PACKET_MS} ms`);
  return { frames, frameMs: ms, durationMs, stereo };
}

/** Duration in milliseconds of the audio in an Opus packet (may be fractional: 2.5 ms frames). */
export function opusPacketDurationMs(packet: Uint8Array): number {
  return inspectOpusPacket(packet).durationMs;
}
