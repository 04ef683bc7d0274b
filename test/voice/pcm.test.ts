// Float -> int16 as libopus' opus_decode does it: FLOAT2INT16 and opus_pcm_soft_clip.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { float2int16, newSoftClipMemory, softClip, toInt16Pcm } from '../../src/voice/opus/pcm.js';
import { tmpDir } from '../support/tmp.js';
import { speechPackets, synthPackets } from './helpers.js';

test('FLOAT2INT16: scale by 32768, clamp, round half to even', () => {
  const rows: [number, number][] = [
    [0, 0], [-0, 0], [1, 32767], [-1, -32768], [1.5, 32767], [-7, -32768],
    [0.5 / 32768, 0], [1.5 / 32768, 2], [2.5 / 32768, 2], [-0.5 / 32768, 0], [-1.5 / 32768, -2], [-2.5 / 32768, -2],
    [0.49 / 32768, 0], [0.51 / 32768, 1], [-0.51 / 32768, -1], [1000.5 / 32768, 1000], [1001.5 / 32768, 1002],
    [32766.5 / 32768, 32766], [-32767.5 / 32768, -32768],
  ];
  for (const [x, expected] of rows) assert.equal(float2int16(x), expected, `x*32768 = ${x * 32768}`);
});

test('soft clipping leaves in-range audio alone and bends overshoots to within full scale', () => {
  const quiet = Float32Array.from([0.1, -0.5, 0.99, -1, 0.25]);
  const mem = newSoftClipMemory();
  softClip(quiet, 5, 1, mem);
  assert.deepEqual([...quiet], [...Float32Array.from([0.1, -0.5, 0.99, -1, 0.25])]);
  assert.equal(mem[0], 0);

  const loud = Float32Array.from([0.2, 0.9, 1.4, 1.1, 0.3, -0.2, -2.5, -0.1]);
  softClip(loud, 8, 1, mem);
  for (const v of loud) assert.ok(v >= -1 && v <= 1, `${v} within [-1, 1]`);
  assert.ok(loud[2]! < 1 && loud[2]! > 0.99, 'the peak lands just below full scale');
  assert.ok(loud[1]! < 0.9, 'the whole run up to the zero crossing is bent');
  assert.equal(loud[0]! < 0.2, true);
  assert.ok(Math.abs(loud[6]! + 1) < 1e-5, 'values past -2 saturate at -2 first and bend to -1');
  assert.ok(mem[0]! > 0, 'memory carries the last (negative) run\'s curve into the next packet');
});

test('interleaved channels are clipped independently', () => {
  const pcm = Float32Array.from([1.5, 0.1, 0.5, 0.2, -0.1, 0.3]); // L: 1.5 0.5 -0.1; R: 0.1 0.2 0.3
  const mem = newSoftClipMemory();
  softClip(pcm, 3, 2, mem);
  assert.deepEqual([pcm[1], pcm[3], pcm[5]], [...Float32Array.from([0.1, 0.2, 0.3])]);
  assert.ok(pcm[0]! <= 1);
  assert.equal(mem[1], 0);
  const out = toInt16Pcm([Float32Array.from([0.5, -0.5]), Float32Array.from([0.25, 1])], 2, newSoftClipMemory());
  assert.deepEqual([out.readInt16LE(0), out.readInt16LE(2), out.readInt16LE(4), out.readInt16LE(6)], [16384, 8192, -16384, 32767]);
});

/**
 * The strongest check: compile a tiny C program against the system libopus, decode the same packets with
 * opus_decode_float and opus_decode, and require that pcm.ts turns the former into the latter exactly.
 * Skipped where no C compiler or no libopus.so.0 is installed.
 */
test('pcm.ts turns libopus float output into libopus int16 output sample for sample', (t) => {
  const dir = tmpDir('voice-pcm-');
  const source = fileURLToPath(new URL('../fixtures/libopus-decode.c', import.meta.url));
  const program = join(dir, 'libopus-decode');
  const build = spawnSync('cc', ['-O2', '-o', program, source, '-l:libopus.so.0'], { encoding: 'utf8', timeout: 60_000 });
  if (build.status !== 0) {
    t.skip(`no C compiler or libopus.so.0: ${(build.stderr ?? String(build.error)).trim().split('\n')[0]}`);
    return;
  }
  const cases = [
    { name: 'speech 16 kHz mono', packets: speechPackets(), rate: 16000, channels: 1 },
    { name: 'overdriven square 16 kHz mono', packets: synthPackets(16000, 1, 60, 'square'), rate: 16000, channels: 1 },
    { name: 'overdriven square 48 kHz stereo', packets: synthPackets(48000, 2, 60, 'square'), rate: 48000, channels: 2 },
  ];
  for (const c of cases) {
    const input = join(dir, 'in.bin');
    writeFileSync(input, Buffer.concat(c.packets.flatMap((p) => [Buffer.from([p.length & 0xff, p.length >> 8]), p])));
    execFileSync(program, [String(c.rate), String(c.channels), input, join(dir, 'f32'), join(dir, 's16')], { timeout: 30_000 });
    const f32 = readFileSync(join(dir, 'f32'));
    const floats = new Float32Array(f32.buffer, f32.byteOffset, f32.length / 4);
    const expected = readFileSync(join(dir, 's16'));
    const perPacket = (c.rate / 50) * c.channels;
    const mem = newSoftClipMemory();
    let clipped = 0;
    const ours = Buffer.concat(c.packets.map((_, k) => {
      const slice = floats.slice(k * perPacket, (k + 1) * perPacket);
      clipped += slice.filter((v) => Math.abs(v) > 1).length;
      const channels = Array.from({ length: c.channels }, (_, ch) => slice.filter((_, i) => i % c.channels === ch));
      return toInt16Pcm(channels, c.rate / 50, mem);
    }));
    assert.equal(ours.length, expected.length, c.name);
    assert.ok(ours.equals(expected), `${c.name}: int16 output differs from libopus`);
    if (c.name.includes('square')) assert.ok(clipped > 100, `${c.name}: the signal really overshoots (${clipped} samples)`);
  }
});
