// Packet durations from the TOC byte (RFC 6716 section 3.1) and the framing checks of section 3.4.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DomainError } from '../../src/errors.js';
import { inspectOpusPacket, opusPacketDurationMs } from '../../src/voice/opus/packet.js';

const toc = (config: number, stereo: boolean, code: number): number => (config << 3) | (stereo ? 4 : 0) | code;
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

test('duration of each TOC configuration for a one-frame packet', () => {
  const expected: [number, number][] = [
    [0, 10], [1, 20], [2, 40], [3, 60],      // SILK NB
    [4, 10], [5, 20], [6, 40], [7, 60],      // SILK MB
    [8, 10], [9, 20], [10, 40], [11, 60],    // SILK WB
    [12, 10], [13, 20], [14, 10], [15, 20],  // Hybrid SWB, FB
    [16, 2.5], [17, 5], [18, 10], [19, 20],  // CELT NB
    [20, 2.5], [21, 5], [22, 10], [23, 20],  // CELT WB
    [24, 2.5], [25, 5], [26, 10], [27, 20],  // CELT SWB
    [28, 2.5], [29, 5], [30, 10], [31, 20],  // CELT FB
  ];
  for (const [config, ms] of expected) {
    assert.equal(opusPacketDurationMs(bytes(toc(config, false, 0), 0xaa)), ms, `config ${config}`);
  }
});

test('frame counts of codes 0..3', () => {
  const rows: { name: string; packet: Uint8Array; frames: number; ms: number }[] = [
    { name: 'code 0', packet: bytes(toc(9, false, 0), 1, 2, 3), frames: 1, ms: 20 },
    { name: 'code 0, TOC only (DTX)', packet: bytes(toc(9, false, 0)), frames: 1, ms: 20 },
    { name: 'code 1, two equal frames', packet: bytes(toc(9, false, 1), 1, 2, 3, 4), frames: 2, ms: 40 },
    { name: 'code 2, two frames', packet: bytes(toc(1, true, 2), 2, 9, 9, 8), frames: 2, ms: 40 },
    { name: 'code 2, two-byte length', packet: Uint8Array.from([toc(31, false, 2), 252, 1, ...new Array(300).fill(7)]), frames: 2, ms: 40 },
    { name: 'code 3, 3 x 20 ms CBR', packet: bytes(toc(31, false, 3), 3, 1, 2, 3), frames: 3, ms: 60 },
    { name: 'code 3, 6 x 20 ms = 120 ms', packet: bytes(toc(27, false, 3), 6), frames: 6, ms: 120 },
    { name: 'code 3, 48 x 2.5 ms = 120 ms', packet: bytes(toc(16, false, 3), 48), frames: 48, ms: 120 },
    { name: 'code 3, VBR and padding flags do not change the count', packet: bytes(toc(19, false, 3), 0xc0 | 2, 0, 1, 1), frames: 2, ms: 40 },
  ];
  for (const row of rows) {
    const info = inspectOpusPacket(row.packet);
    assert.equal(info.frames, row.frames, row.name);
    assert.equal(info.durationMs, row.ms, row.name);
  }
  assert.equal(inspectOpusPacket(bytes(toc(1, true, 0))).stereo, true);
});

test('packets no decoder accepts are refused as invalid_argument', () => {
  const rows: { name: string; packet: Uint8Array; reason: RegExp }[] = [
    { name: 'empty', packet: bytes(), reason: /empty packet/ },
    { name: 'code 1 with odd payload', packet: bytes(toc(9, false, 1), 1, 2, 3), reason: /odd payload/ },
    { name: 'code 2 without a length', packet: bytes(toc(9, false, 2)), reason: /without a frame length/ },
    { name: 'code 2 truncated length', packet: bytes(toc(9, false, 2), 253), reason: /truncated frame length/ },
    { name: 'code 2 first frame too long', packet: bytes(toc(9, false, 2), 5, 1, 2), reason: /longer than the packet/ },
    { name: 'code 3 without a count', packet: bytes(toc(9, false, 3)), reason: /frame count byte/ },
    { name: 'code 3 with zero frames', packet: bytes(toc(9, false, 3), 0), reason: /zero frames/ },
    { name: 'code 3 over 120 ms', packet: bytes(toc(3, false, 3), 3), reason: /exceed 120 ms/ },
    { name: 'code 3, 49 x 2.5 ms', packet: bytes(toc(16, false, 3), 49), reason: /exceed 120 ms/ },
    { name: 'code 0 frame over 1275 bytes', packet: new Uint8Array(1277).fill(0), reason: /exceeds 1275/ },
  ];
  for (const row of rows) {
    assert.throws(
      () => opusPacketDurationMs(row.packet),
      (e: unknown) => e instanceof DomainError && e.code === 'invalid_argument' && row.reason.test(e.message),
      row.name,
    );
  }
});
