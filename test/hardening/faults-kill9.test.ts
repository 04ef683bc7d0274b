// SIGKILL during a stream of registrations (docs/operations.md "Storage": an acknowledged registration is on
// disk before its response). Four clients register devices as fast as the service answers; after a
// number of acknowledgements the process is killed with requests in flight, restarted on the same
// data dir, and the cycle repeats. Every registration acknowledged with 200 before a kill must be
// listed after the restart; nothing that was never sent may appear.
import { HubConnectionBuilder, LogLevel } from '@microsoft/signalr';
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { tmpDir } from '../support/tmp.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { adminTokenFor, speechPackets, startDaemon, startSession, type Daemon } from './daemon.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const CYCLES = 3;
const WORKERS = 4;
/** Acknowledgements to wait for before each kill: enough that the kill lands mid-stream. */
const ACKS_PER_CYCLE = 40;

let daemon: Daemon | undefined;
after(async () => {
  await daemon?.stop();
});

describe('kill -9 during a stream of registrations', () => {
  it(`every acknowledged registration survives ${CYCLES} kills`, async (t) => {
    const dataDir = tmpDir('voice-hub-kill9-');
    const acknowledged = new Set<string>();
    const attempted = new Set<string>();
    let inFlightAtKills = 0;
    let counter = 0;

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const d = await startDaemon({ dataDir });
      daemon = d;
      const ackedBefore = acknowledged.size;
      let stop = false;
      let inFlight = 0;
      const worker = async (): Promise<void> => {
        while (!stop) {
          const id = `k9-${cycle}-${++counter}`;
          attempted.add(id);
          inFlight++;
          try {
            const res = await call(d.url, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: id, deviceType: 'speaker' } });
            if (res.status === 200) acknowledged.add(id);
            else if (!stop) assert.fail(`register ${id}: ${res.status} ${res.text}`);
          } catch (e) {
            // The connection died with the process: not acknowledged, so nothing is owed.
            if (!stop) throw e;
          } finally {
            inFlight--;
          }
        }
      };
      const failures: unknown[] = [];
      const workers = Array.from({ length: WORKERS }, () => worker().catch((e: unknown) => void failures.push(e)));
      await waitUntil(() => acknowledged.size - ackedBefore >= ACKS_PER_CYCLE || !d.alive(), `${ACKS_PER_CYCLE} acknowledgements`, 30_000, 1);
      assert.ok(d.alive(), d.death());
      inFlightAtKills += inFlight;
      // A 200 read after the kill was still sent before it: it counts as acknowledged.
      stop = true;
      d.svc.proc.kill('SIGKILL');
      await withTimeout(d.svc.exited, 5000, 'exit after SIGKILL');
      await withTimeout(Promise.all(workers), 20_000, 'workers to notice the kill');
      assert.deepEqual(failures, [], 'registrations failed before the kill');
    }

    const d = await startDaemon({ dataDir });
    daemon = d;
    const admin = await adminTokenFor(dataDir);
    const res = await call(d.url, 'GET', '/api/device/list', { token: admin });
    assert.equal(res.status, 200, res.text);
    const present = new Set((res.json.devices as { id: string }[]).map((x) => x.id));
    const lost = [...acknowledged].filter((id) => !present.has(id));
    assert.deepEqual(lost, [], `${lost.length} acknowledged registrations lost`);
    const phantoms = [...present].filter((id) => !attempted.has(id));
    assert.deepEqual(phantoms, [], 'devices nobody registered');
    assert.ok(acknowledged.size >= CYCLES * ACKS_PER_CYCLE);
    t.diagnostic(`${acknowledged.size} acknowledged, ${present.size} present after ${CYCLES} kills (${inFlightAtKills} requests in flight at the kills)`);
  });
});

describe('kill -9 right after a session start and a stop', () => {
  it('both sessions are known after the restart: the stopped one as stopped, the running one as ended by the restart', async () => {
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    const dataDir = tmpDir();
    try {
      const d = await startDaemon({ dataDir, settings: { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` }, Storage: { FlushInterval: '01:00:00' } } });
      daemon = d;
      const stopped = await startSession(d.url);
      const stop = await call(d.url, 'POST', '/api/voice/stop', { token: stopped.token, body: { sessionId: stopped.sessionId } });
      assert.equal(stop.status, 200, stop.text);
      const running = await startSession(d.url);
      // At once: only what was on disk before each answer survives.
      d.svc.proc.kill('SIGKILL');
      await withTimeout(d.svc.exited, 5000, 'exit after SIGKILL');

      const again = await startDaemon({ dataDir, settings: { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` } } });
      daemon = again;
      const first = await call(again.url, 'POST', '/api/voice/stop', { token: stopped.token, body: { sessionId: stopped.sessionId } });
      assert.equal(first.status, 200, first.text);
      assert.deepEqual([first.json.state, first.json.endReason], ['Stopped', 'stopped by request']);
      const second = await call(again.url, 'POST', '/api/voice/stop', { token: running.token, body: { sessionId: running.sessionId } });
      assert.equal(second.status, 200, second.text);
      assert.deepEqual([second.json.state, second.json.endReason], ['Stopped', 'service restarted']);
    } finally {
      await echo.close();
    }
  });
});

describe('kill -9 in the middle of a session', () => {
  it("the session's audio packets counted before the last telemetry flush are still counted after the restart", async () => {
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    const dataDir = tmpDir();
    const settings = { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` }, Storage: { FlushInterval: '00:00:00.2000000' } };
    try {
      const d = await startDaemon({ dataDir, settings });
      daemon = d;
      const session = await startSession(d.url);
      const connection = new HubConnectionBuilder().withUrl(`${d.url}/voice-hub`).configureLogging(LogLevel.None).build();
      connection.on('SessionJoined', () => {});
      await withTimeout(connection.start(), 5000, 'hub start');
      await connection.invoke('JoinSession', session.sessionId, session.token);
      const packets = speechPackets().slice(0, 7);
      for (const p of packets) await connection.invoke('SendAudioData', session.sessionId, p.toString('base64'));
      // Past the flush interval: the count is as durable as a device's telemetry then.
      await new Promise((r) => setTimeout(r, 1000));
      d.svc.proc.kill('SIGKILL');
      await withTimeout(d.svc.exited, 5000, 'exit after SIGKILL');
      await connection.stop();

      const again = await startDaemon({ dataDir, settings });
      daemon = again;
      const stop = await call(again.url, 'POST', '/api/voice/stop', { token: session.token, body: { sessionId: session.sessionId } });
      assert.equal(stop.status, 200, stop.text);
      assert.deepEqual([stop.json.state, stop.json.endReason, stop.json.audioPacketsSent], ['Stopped', 'service restarted', packets.length]);
    } finally {
      await echo.close();
    }
  });
});
