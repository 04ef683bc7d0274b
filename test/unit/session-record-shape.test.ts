// Session records are read per packet (VoiceSession.sendAudio); copies that each get a map of their
// own make those reads megamorphic (bench/RESULTS.md, "one shape per object on the per-packet path").
// V8's own map comparison, reached through its natives syntax turned on for this process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import { copySessionRecord } from '../../src/store/session-record.js';
import type { SessionRecord } from '../../src/store/types.js';

v8.setFlagsFromString('--allow-natives-syntax');
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b);') as (a: object, b: object) => boolean;

const made = (i: number): SessionRecord => ({
  id: `s${i}`, deviceId: 'd', userId: 'u', state: 'Starting', startTime: 't', endTime: null, endReason: null,
  config: { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: false, serverUrl: 'ws://x' }, audioPacketsSent: 0,
});

test('copies of session records made every way the service makes them share one map', () => {
  const sources: SessionRecord[] = [];
  for (let i = 0; i < 30; i++) {
    const r = made(i);
    const ended = made(i);
    ended.state = 'Stopped';
    ended.endTime = 't2';
    ended.endReason = 'stopped';
    ended.audioPacketsSent = 1;
    sources.push(r, { ...r, config: { ...r.config } }, JSON.parse(JSON.stringify(r)) as SessionRecord, ended);
  }
  const copies = sources.map((r) => copySessionRecord(copySessionRecord(r)));
  const first = copies[0]!;
  assert.deepEqual(copies[1], { ...sources[1], config: { ...sources[1]!.config } });
  assert.deepEqual({
    records: copies.filter((c) => !haveSameMap(c, first)).length,
    configs: copies.filter((c) => !haveSameMap(c.config, first.config)).length,
  }, { records: 0, configs: 0 });
});
