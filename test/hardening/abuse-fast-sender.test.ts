// A client sending audio far faster than real time into one session while the upstream voice server
// stops reading (its socket paused): the upstream link refuses audio once 256 KiB wait in its socket
// ("upstream is not keeping up: audio dropped", an Error to the sender) instead of buffering without
// bound. Every packet is accounted for: AudioProcessed (forwarded) or Error (refused); what was
// forwarded reaches upstream in order with consecutive sequence numbers once it reads again; the
// session then takes audio again; the service's RSS stays bounded throughout.
//
// RSS bound: baseline + 60 MiB at any sample (the link holds at most 256 KiB plus one frame; the hub
// queues at most 1,024 invocations per connection; the rest is garbage of ~9 MB of MessagePack and
// JSON). Buffering every refused packet instead would add about 10 MB per 6,000 packets, and grow.
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertHealthyProcess, settledRss, startDaemon, startSession, type Daemon, type StartedSession } from './daemon.js';
import { FakeUpstream } from './fake-upstream.js';
import { HubWire } from './hub-wire.js';
import { sleep, waitUntil } from '../support/wait.js';

const PACKETS = 6000;
const RSS_BOUND_MB = 60;
/** A valid Opus packet of the largest frame: TOC config 31 (CELT fullband 20 ms), code 0, 1,275 bytes. */
const PACKET = Uint8Array.from([0xf8, ...Array.from({ length: 1275 }, (_, i) => (i * 7) & 0xff)]);

let upstream: FakeUpstream;
let daemon: Daemon;
let session: StartedSession;

before(async () => {
  upstream = await FakeUpstream.start();
  // What is tested here is the upstream link's back-pressure, so the hub's own message budget (which
  // closes a client sending this far above real time: abuse-hostile-frames.test.ts) is opened wide.
  daemon = await startDaemon({
    settings: { VoiceService: { ServerUrl: upstream.url }, Hub: { MessageRate: 1_000_000, MessageBurst: 1_000_000 } },
  });
  session = await startSession(daemon.url);
});

after(async () => {
  await daemon?.stop();
  await upstream?.close();
});

describe('a client sending audio faster than real time', () => {
  it('is refused with "not keeping up" while upstream does not read; memory stays bounded; nothing is lost silently', async (t) => {
    const wire = await HubWire.connect(daemon.url, 'messagepack');
    await wire.join(session.sessionId, session.token);
    const upstreamSocket = (upstream.socketFor(session.sessionId) as unknown as { _socket: net.Socket })._socket;
    upstreamSocket.pause();
    const baseline = await settledRss(daemon);

    let maxRss = baseline;
    for (let sent = 0; sent < PACKETS; sent += 200) {
      for (let k = 0; k < 200; k++) wire.send('SendAudioData', [session.sessionId, PACKET]);
      await sleep(5);
      maxRss = Math.max(maxRss, daemon.rssMb());
    }
    // Invocations run one at a time in order: this completion comes after every packet above.
    await wire.invoke('JoinSession', [session.sessionId, session.token], 30_000);
    maxRss = Math.max(maxRss, daemon.rssMb());

    const processed = wire.of('AudioProcessed').map(([p]) => (p as { sequence: number }).sequence);
    const refused = wire.of('Error').filter(([m]) => m === 'upstream is not keeping up: audio dropped').length;
    const otherErrors = wire.of('Error').filter(([m]) => m !== 'upstream is not keeping up: audio dropped');
    assert.deepEqual(otherErrors, []);
    assert.equal(processed.length + refused, PACKETS, 'every packet forwarded or refused');
    assert.ok(refused > 0, 'upstream back-pressure never refused a packet');
    assert.deepEqual(processed, processed.map((_, i) => i + 1), 'sequence numbers count forwarded packets only');
    assert.ok(maxRss <= baseline + RSS_BOUND_MB, `RSS reached ${maxRss.toFixed(1)} MiB from ${baseline.toFixed(1)} MiB`);

    // Upstream reads again: it gets exactly what was acknowledged, in order; new audio flows.
    upstreamSocket.resume();
    await waitUntil(() => upstream.of('audio', session.sessionId).length >= processed.length, 'upstream to read the forwarded audio', 20_000);
    assert.deepEqual(upstream.of('audio', session.sessionId).map((f) => f.sequence), processed);
    const errorsBefore = wire.of('Error').length;
    for (let k = 0; k < 10; k++) wire.send('SendAudioData', [session.sessionId, PACKET]);
    await waitUntil(() => wire.of('AudioProcessed').length === processed.length + 10, '10 more packets forwarded', 10_000);
    assert.equal(wire.of('Error').length, errorsBefore);
    assert.ok(wire.open);
    assertHealthyProcess(daemon);
    t.diagnostic(`${processed.length} forwarded, ${refused} refused; RSS ${baseline.toFixed(1)} -> max ${maxRss.toFixed(1)} MiB`);
    wire.close();
  });
});
