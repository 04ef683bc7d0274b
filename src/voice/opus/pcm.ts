// Float -> 16-bit PCM exactly as libopus' own `opus_decode` does it in its float build, so that our
// decoded upstream audio equals what a native int16 decoder would give. `opus-decoder` only exposes the float path
// (`opus_decode_float`, which skips soft clipping); libopus' int16 path is opus_decode_native(..., soft_clip=1)
// followed by FLOAT2INT16 (src/opus_decoder.c, celt/float_cast.h). Both steps are reproduced here in float32
// arithmetic (Math.fround after every operation, as C's float does).
const f = Math.fround;

/** Soft-clipping memory per channel, carried from one packet to the next like OpusDecoder.softclip_mem. */
export type SoftClipMemory = Float32Array;

export function newSoftClipMemory(): SoftClipMemory {
  return new Float32Array(2);
}

/**
 * opus_pcm_soft_clip (src/opus.c): saturates to +/-2, then bends any run that crosses +/-1 with
 * x + a*x^2 so the output stays within [-1, 1] without a discontinuity. `pcm` is interleaved, in place.
 */
export function softClip(pcm: Float32Array, frameSize: number, channels: number, mem: SoftClipMemory): void {
  const n = frameSize;
  const c0 = channels;
  if (c0 < 1 || n < 1) return;
  for (let i = 0; i < n * c0; i++) pcm[i] = Math.max(-2, Math.min(2, pcm[i]!));
  for (let c = 0; c < c0; c++) {
    const at = (i: number): number => pcm[i * c0 + c]!;
    const put = (i: number, v: number): void => { pcm[i * c0 + c] = v; };
    let a = mem[c]!;
    // Continue the previous packet's non-linearity up to the first zero crossing.
    for (let i = 0; i < n; i++) {
      const x = at(i);
      if (f(x * a) >= 0) break;
      put(i, f(x + f(f(a * x) * x)));
    }
    let curr = 0;
    const x0 = at(0);
    for (;;) {
      let i = curr;
      while (i < n && !(at(i) > 1 || at(i) < -1)) i++;
      if (i === n) {
        a = 0;
        break;
      }
      let peakPos = i;
      let start = i;
      let end = i;
      let maxval = Math.abs(at(i));
      while (start > 0 && f(at(i) * at(start - 1)) >= 0) start--;
      while (end < n && f(at(i) * at(end)) >= 0) {
        if (Math.abs(at(end)) > maxval) {
          maxval = Math.abs(at(end));
          peakPos = end;
        }
        end++;
      }
      const special = start === 0 && f(at(i) * at(0)) >= 0;
      a = f(f(maxval - 1) / f(maxval * maxval));
      a = f(a + f(a * f(2.4e-7)));
      if (at(i) > 0) a = -a;
      for (let j = start; j < end; j++) {
        const x = at(j);
        put(j, f(x + f(f(a * x) * x)));
      }
      if (special && peakPos >= 2) {
        // A linear ramp from the first sample to the peak avoids a discontinuity at the packet start.
        let offset = f(x0 - at(0));
        const delta = f(offset / peakPos);
        for (let j = curr; j < peakPos; j++) {
          offset = f(offset - delta);
          put(j, Math.max(-1, Math.min(1, f(at(j) + offset))));
        }
      }
      curr = end;
      if (curr === n) break;
    }
    mem[c] = a;
  }
}

/**
 * lrintf in the default rounding mode (to nearest, ties to even): adding and removing 1.5 * 2^52 makes the
 * FPU round away the fraction exactly so, for any |x| < 2^51. Much cheaper than Math.round plus a tie fix.
 */
const ROUND_TO_EVEN = 6755399441055744;

/** FLOAT2INT16 (celt/float_cast.h): scale by 32768, clamp to the int16 range, lrintf. */
export function float2int16(x: number): number {
  const y = x * 32768; // exact: x is a float and 32768 a power of two
  if (y >= 32767) return 32767;
  if (y <= -32768) return -32768;
  return (y + ROUND_TO_EVEN - ROUND_TO_EVEN) | 0; // | 0: no -0 (and NaN gives 0)
}

/** Int16Array writes are little-endian only on little-endian hosts (x64, arm64 and armv7 all are). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The int16 PCM when soft clipping would change nothing: no sample beyond full scale and no curve
 * carried over from the previous packet (opus_pcm_soft_clip is then the identity and leaves its memory
 * at 0). Undefined otherwise. Speech almost always takes this path: one pass, no interleaving copy.
 */
function withoutClipping(channelData: readonly Float32Array[], samples: number, mem: SoftClipMemory, alloc: PcmAlloc): Buffer | undefined {
  const channels = channelData.length;
  for (let c = 0; c < channels; c++) if (mem[c] !== 0) return undefined;
  const out = alloc(samples * channels * 2);
  if (!LITTLE_ENDIAN || out.byteOffset % 2 !== 0) return undefined;
  const view = new Int16Array(out.buffer, out.byteOffset, samples * channels);
  for (let c = 0; c < channels; c++) {
    const src = channelData[c]!;
    for (let i = 0, j = c; i < samples; i++, j += channels) {
      const x = src[i]!;
      if (x > 1 || x < -1) return undefined;
      view[j] = float2int16(x);
    }
  }
  return out;
}

/**
 * Where the PCM is written: Node's buffer pool by default (cheap for small packets); a decoder thread
 * gives each packet an ArrayBuffer of its own, since only a whole ArrayBuffer can be transferred.
 */
export type PcmAlloc = (bytes: number) => Buffer;

const pooled: PcmAlloc = (bytes) => Buffer.allocUnsafe(bytes);

/**
 * Interleaves per-channel float output, soft-clips it like opus_decode, and writes 16-bit little-endian
 * interleaved PCM.
 */
export function toInt16Pcm(channelData: readonly Float32Array[], samples: number, mem: SoftClipMemory, alloc: PcmAlloc = pooled): Buffer {
  const fast = withoutClipping(channelData, samples, mem, alloc);
  if (fast) return fast;
  const channels = channelData.length;
  const interleaved = new Float32Array(samples * channels);
  for (let c = 0; c < channels; c++) {
    const src = channelData[c]!;
    for (let i = 0; i < samples; i++) interleaved[i * channels + c] = src[i]!;
  }
  softClip(interleaved, samples, channels, mem);
  const out = alloc(interleaved.length * 2);
  for (let i = 0; i < interleaved.length; i++) out.writeInt16LE(float2int16(interleaved[i]!), i * 2);
  return out;
}
