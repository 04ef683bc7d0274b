// A session record's copy, written out field by field: a spread (`{ ...record }`) gives copies made
// before V8's clone cache warms up maps of their own, and the per-packet reads of a session's record
// then meet several maps (bench/RESULTS.md, "one shape per object on the per-packet path").
import type { SessionRecord } from './types.js';

export function copySessionRecord(r: SessionRecord): SessionRecord {
  const c = r.config;
  return {
    id: r.id,
    deviceId: r.deviceId,
    userId: r.userId,
    state: r.state,
    startTime: r.startTime,
    endTime: r.endTime,
    endReason: r.endReason,
    config: { audioFormat: c.audioFormat, sampleRate: c.sampleRate, channels: c.channels, autoMode: c.autoMode, serverUrl: c.serverUrl },
    audioPacketsSent: r.audioPacketsSent,
  };
}
