// A hub client that never reads, in a session group that receives a flood of audio from upstream
// (48 kHz stereo: about 5 KB of AudioResponse per 20 ms packet). uWS would drop
// sends to a slow receiver silently, so the hub closes a connection with more than 1 MiB unsent, with
// a Close message that says why. The slow client, once it reads again, finds that Close after the
// frames it had missed; the two other members (JSON and MessagePack) receive every packet and stay
// connected; the service's RSS stays bounded during the flood.
//
// The slow client reads again as soon as the service logs that it closed it: uWS gives a socket it
// ends only a few seconds to drain before dropping it with what it still held, Close included. A
// client that stays silent longer than that gets 1006 and no reason, which is all a server that must
// not keep a stuck socket can offer; resuming after a fixed pause made this test depend on the load.
//
// RSS bound: baseline + 80 MiB at any sample during the flood (the slow socket may hold 2 MiB in uWS
// plus kernel buffers; the rest is garbage of the ~30 MB of JSON and MessagePack the flood produces,
// which V8 collects at its own pace). Unbounded buffering for the slow client would pass 80 MiB.
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertHealthyProcess, settledRss, speechPackets, type Daemon, type StartedSession } from './daemon.js';
import { startUpstreamRig, type FakeUpstream, type UpstreamRig } from './fake-upstream.js';
import { HubWire } from './hub-wire.js';
import { sleep, waitUntil } from '../support/wait.js';

const FRAMES = 3000;
const RSS_BOUND_MB = 80;

let upstream: FakeUpstream;
let daemon: Daemon;
let session: StartedSession;

let rig: UpstreamRig | undefined;

before(async () => {
  rig = await startUpstreamRig({ sampleRate: 48000, channels: 2 });
  ({ upstream, daemon, session } = rig);
});

after(async () => {
  await rig?.stop();
});

const rawSocket = (wire: HubWire): net.Socket => (wire.ws as unknown as { _socket: net.Socket })._socket;

describe('a slow reader in a session group', () => {
  it('is closed by the back-pressure policy; the other members get every packet', async (t) => {
    const slow = await HubWire.connect(daemon.url, 'json');
    const others = [await HubWire.connect(daemon.url, 'json'), await HubWire.connect(daemon.url, 'messagepack')];
    for (const w of [slow, ...others]) await w.join(session.sessionId, session.token);
    rawSocket(slow).pause();
    const baseline = await settledRss(daemon);

    const socket = upstream.socketFor(session.sessionId)!;
    const packets = speechPackets().map((p) => JSON.stringify({ type: 'audio', data: p.toString('base64'), sampleRate: 48000, channels: 2 }));
    let maxRss = baseline;
    const closedAsSlow = (): boolean => daemon.svc.output().includes('closing the slow connection');
    // 20 packets every 10 ms: 40 times real time, paced so that readers that read keep up.
    for (let sent = 0; sent < FRAMES; sent += 20) {
      for (let k = 0; k < 20; k++) socket.send(packets[(sent + k) % packets.length]!);
      await sleep(10);
      if (sent % 200 === 0) maxRss = Math.max(maxRss, daemon.rssMb());
      if (rawSocket(slow).isPaused() && closedAsSlow()) rawSocket(slow).resume();
    }
    await waitUntil(() => others.every((o) => o.of('AudioResponse').length >= FRAMES), `${FRAMES} AudioResponse at the other members`, 30_000);
    maxRss = Math.max(maxRss, daemon.rssMb());

    for (const o of others) {
      assert.equal(o.of('AudioResponse').length, FRAMES, `${o.protocol}: every packet, once`);
      assert.equal(o.of('AudioData').length, FRAMES);
      assert.ok(o.open, `${o.protocol} member was closed`);
      assert.ok(!o.messages.some((m) => m.type === 7), `${o.protocol} member got a Close`);
      assert.deepEqual(o.errors, []);
    }

    await waitUntil(closedAsSlow, 'the service to log that it closed the slow client', 15_000);
    rawSocket(slow).resume();
    await waitUntil(() => !slow.open, 'the slow client to be closed', 15_000);
    const close = slow.messages.find((m) => m.type === 7);
    assert.ok(close, `no Close message; the slow client read ${slow.of('AudioResponse').length} AudioResponse`);
    assert.equal(close.error, 'Server closed the connection: client too slow to receive messages.');
    assert.ok(slow.of('AudioResponse').length < FRAMES, 'the slow client was closed before the end of the flood');
    assert.ok(maxRss <= baseline + RSS_BOUND_MB, `RSS reached ${maxRss.toFixed(1)} MiB from ${baseline.toFixed(1)} MiB`);

    // The group goes on without it.
    const before = others.map((o) => o.of('AudioResponse').length);
    socket.send(packets[0]!);
    await waitUntil(() => others.every((o, i) => o.of('AudioResponse').length === before[i]! + 1), 'one more packet at the members', 5000);
    assertHealthyProcess(daemon);
    t.diagnostic(`slow client got ${slow.of('AudioResponse').length} of ${FRAMES} packets; RSS ${baseline.toFixed(1)} -> max ${maxRss.toFixed(1)} MiB`);
    for (const o of others) o.close();
  });
});
