// Crash consistency of every acknowledged write (docs/operations.md, "Storage" and "Shutdown"). Workers
// drive a seeded mix of registrations (new ids, ids deleted before, ids that exist), deletions, status
// updates, configuration writes and session starts and stops against the built service, which is then
// killed with SIGKILL after a seeded number of answers (or, some cycles, stopped with SIGTERM) and
// restarted on the same data directory. After each restart the store must hold:
// - every registration, deletion, configuration write, session start and stop answered 2xx, exactly as
//   answered; a write in flight at the kill may or may not be there, and one refused is not there at all;
// - as a device's status, after SIGKILL one of the values sent to that device since it was registered (or
//   its first `online`): telemetry is written at the next flush, and a crash loses what came after the last
//   one, but never brings back a deleted device's telemetry; after SIGTERM exactly the last one answered;
// - no leftover temporary file, and the service starts every time;
// - under SIGTERM every request the service took is answered (exit 0): a write that came during the drain
//   may be refused with 503 and is then not applied, a stop may answer the record the shutdown wrote, and
//   a start that replaced the device's session may see its own ended by the shutdown (409) before its answer.
// Per device one request at a time, and one configuration writer, so "as answered" has one meaning.
// CRASH_SEED=<n> reproduces a run: the operations are the seed's, only the kill's timing differs.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { call, type HttpResult } from '../support/http.js';
import { tmpDir } from '../support/tmp.js';
import { silentLogger } from '../../src/log/logger.js';
import { startEchoServer } from '../../src/upstream/echo-server.js';
import { adminTokenFor, startDaemon, type Daemon } from '../hardening/daemon.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const SEED = Number(process.env.CRASH_SEED ?? 20261130);
const CYCLES = 20;
const WORKERS = 4;

/** mulberry32: small, seedable, good enough to pick operations. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Known, or one of two outcomes because the write was in flight at the kill. */
type Maybe = boolean | 'either';

interface DeviceModel {
  readonly id: string;
  name: string;
  token: string;
  exists: Maybe;
  /** Statuses the stored device may show after a kill (sent since its registration, and `online`). */
  statuses: Set<string>;
  /** The last status answered 200: what a clean stop must have written. */
  lastStatus: string;
  busy: boolean;
}

interface SessionModel {
  readonly id: string;
  readonly device: DeviceModel;
  /** The token of the registration the session was started under. */
  readonly token: string;
  /** Stopped by request: true once answered, 'either' when the stop was in flight at the kill. */
  stopped: Maybe;
  /** The end reason a stop answered: 'stopped by request', or 'service shutdown' when SIGTERM ended it first. */
  endReason?: string;
  /** A start for its device was in flight at the kill or refused by the shutdown: it may have ended this one ('replaced'). */
  replaceable?: boolean;
}

let daemon: Daemon | undefined;
after(async () => {
  await daemon?.stop();
});

describe('crash consistency of acknowledged writes', () => {
  it(`every write answered 2xx survives ${CYCLES} kills and clean stops as answered`, async (t) => {
    const echo = await startEchoServer({ host: '127.0.0.1', port: 0, logger: silentLogger });
    const settings = { VoiceService: { ServerUrl: `ws://127.0.0.1:${echo.port}/voice` }, Storage: { FlushInterval: '00:00:00.0500000' } };
    const dataDir = tmpDir('voice-hub-crash-');
    // Two streams: the stops' schedule does not shift with how the workers' requests interleave.
    const rnd = random(SEED);
    const schedule = random(SEED ^ 0x5bd1e995);
    const pick = <T>(items: readonly T[]): T | undefined => (items.length === 0 ? undefined : items[Math.floor(rnd() * items.length)]);
    const devices = new Map<string, DeviceModel>();
    const sessions = new Map<string, SessionModel>();
    // The voice category's wake words: the last answered value, and one in flight at a kill.
    let wakeWords: string[] = [];
    let wakeWordsInFlight: string[] | undefined;
    let configBusy = false;
    let counter = 0;
    let acks = 0;
    let admin = '';
    const tally = { kills: 0, terms: 0, unanswered: 0, refused: 0 };
    /**
     * Why requests of this cycle got no answer. Under SIGTERM only a connection refused may: a request
     * sent as the listening socket closed never reached the service; one it took must be answered.
     */
    let unanswered: string[] = [];

    try {
      for (let cycle = 0; cycle <= CYCLES; cycle++) {
        const d = await startDaemon({ dataDir, settings });
        daemon = d;
        admin ||= await adminTokenFor(dataDir);
        await verify(d, cycle);
        if (cycle === CYCLES) break;

        const clean = schedule() < 0.25;
        const target = acks + 3 + Math.floor(schedule() * 40);
        let stop = false;
        unanswered = [];
        const failures: unknown[] = [];
        const worker = async (): Promise<void> => {
          while (!stop) {
            await step(d, () => stop);
          }
        };
        const workers = Array.from({ length: WORKERS }, () => worker().catch((e: unknown) => void failures.push(e)));
        await waitUntil(() => acks >= target || failures.length > 0 || !d.alive(), `${target - acks} more answers`, 30_000, 1);
        assert.deepEqual(failures, [], 'a write failed before the kill');
        assert.ok(d.alive(), d.death());
        stop = true;
        if (clean) {
          tally.terms++;
          // Every request in flight is answered before the exit, and the exit is 0.
          assert.equal(await d.stop(), 0, d.svc.output().slice(-2000));
        } else {
          tally.kills++;
          d.svc.proc.kill('SIGKILL');
          await withTimeout(d.svc.exited, 5000, 'exit after SIGKILL');
        }
        await withTimeout(Promise.all(workers), 20_000, 'workers to notice the stop');
        assert.deepEqual(failures, [], 'a write failed');
        if (clean) assert.deepEqual(unanswered.filter((m) => !/ECONNREFUSED/.test(m)), [], 'requests in flight at SIGTERM were not answered');
        if (clean) for (const dev of devices.values()) dev.statuses = new Set([dev.lastStatus]);
      }
      t.diagnostic(`seed ${SEED}: ${acks} answers, ${tally.kills} kills, ${tally.terms} clean stops, ${tally.unanswered} requests the kills left unanswered, ${tally.refused} refused as expected`);
    } finally {
      await echo.close();
    }

    /** One random operation; its answer updated into the model, or marked open when the process died. */
    async function step(d: Daemon, stopped: () => boolean): Promise<void> {
      const r = rnd();
      const free = [...devices.values()].filter((x) => !x.busy);
      const present = free.filter((x) => x.exists === true);
      if (r < 0.2 || present.length === 0) return register(d, `cc-${++counter}`, stopped);
      if (r < 0.27) {
        const gone = free.find((x) => x.exists === false);
        if (gone) return register(d, gone.id, stopped);
      }
      const dev = pick(present)!;
      if (r < 0.32) return register(d, dev.id, stopped); // exists: refused, and changes nothing
      if (r < 0.55) return status(d, dev, stopped);
      if (r < 0.63) return remove(d, dev, stopped);
      if (r < 0.72 && !configBusy) return configure(d, stopped);
      if (r < 0.85) return startSession(d, dev, stopped);
      const open = [...sessions.values()].find((s) => s.device === dev && s.token === dev.token && s.stopped === false);
      if (open) return stopSession(d, open, stopped);
      return status(d, dev, stopped);
    }

    /** The answer, or undefined when the connection died with the process (only after the stop). */
    async function send(d: Daemon, stopped: () => boolean, method: string, path: string, opts: Parameters<typeof call>[3]): Promise<HttpResult | undefined> {
      try {
        return await call(d.url, method, path, opts);
      } catch (e) {
        if (stopped()) {
          unanswered.push((e as Error).message);
          tally.unanswered++;
          return undefined;
        }
        throw e;
      }
    }

    /**
     * Whether the write was answered `expected`; false when it was refused because the service is
     * stopping (503), which a write arriving during the drain may be: then it must not be applied.
     */
    function answered(res: HttpResult, expected: number, what: string, stopped: () => boolean): boolean {
      if (stopped() && res.status === 503) {
        assert.match(res.json?.detail ?? '', /^(the service is shutting down|storage is closed)$/, `${what}: ${res.text}`);
        tally.refused++;
        return false;
      }
      assert.equal(res.status, expected, `${what}: ${res.text}`);
      acks++;
      return true;
    }

    async function register(d: Daemon, id: string, stopped: () => boolean): Promise<void> {
      const known = devices.get(id);
      if (known?.busy) return;
      const name = `name-${++counter}`;
      if (known) known.busy = true;
      try {
        const res = await send(d, stopped, 'POST', '/api/device/register', { body: { deviceId: id, deviceName: name, deviceType: 'speaker' } });
        if (known?.exists === true) {
          if (res && answered(res, 409, `register existing ${id}`, stopped)) tally.refused++;
          return;
        }
        if (!res) {
          // A registration in flight may be on disk, with a token the test never learnt.
          devices.set(id, { id, name, token: '', exists: 'either', statuses: new Set(['online']), lastStatus: 'online', busy: false });
          return;
        }
        if (!answered(res, 200, `register ${id}`, stopped)) {
          devices.set(id, { id, name, token: '', exists: false, statuses: new Set(), lastStatus: '', busy: false });
          return;
        }
        const fresh: DeviceModel = { id, name, token: res.json.deviceToken, exists: true, statuses: new Set(['online']), lastStatus: 'online', busy: true };
        devices.set(id, fresh);
      } finally {
        devices.get(id)!.busy = false;
      }
    }

    async function status(d: Daemon, dev: DeviceModel, stopped: () => boolean): Promise<void> {
      dev.busy = true;
      try {
        const value = `s-${++counter}`;
        dev.statuses.add(value);
        const res = await send(d, stopped, 'PUT', `/api/device/${dev.id}/status`, { token: dev.token, body: { status: value, batteryLevel: 50 } });
        if (!res) return;
        if (!answered(res, 200, `status of ${dev.id}`, stopped)) {
          dev.statuses.delete(value);
          return;
        }
        assert.equal(res.json.status, value);
        dev.lastStatus = value;
      } finally {
        dev.busy = false;
      }
    }

    async function remove(d: Daemon, dev: DeviceModel, stopped: () => boolean): Promise<void> {
      dev.busy = true;
      try {
        const res = await send(d, stopped, 'DELETE', `/api/device/${dev.id}`, { token: admin });
        if (!res) {
          dev.exists = 'either';
          return;
        }
        if (!answered(res, 200, `delete ${dev.id}`, stopped)) return;
        dev.exists = false;
      } finally {
        dev.busy = false;
      }
    }

    async function configure(d: Daemon, stopped: () => boolean): Promise<void> {
      configBusy = true;
      try {
        const value = [`w${++counter}`, `w${++counter}`].slice(0, 1 + Math.floor(rnd() * 2));
        wakeWordsInFlight = value;
        const res = await send(d, stopped, 'PUT', '/api/config/voice', { token: admin, body: { wakeWords: value } });
        if (!res) return;
        if (!answered(res, 200, 'PUT /api/config/voice', stopped)) {
          wakeWordsInFlight = undefined;
          return;
        }
        assert.deepEqual(res.json.wakeWords, value);
        wakeWords = value;
        wakeWordsInFlight = undefined;
      } finally {
        configBusy = false;
      }
    }

    async function startSession(d: Daemon, dev: DeviceModel, stopped: () => boolean): Promise<void> {
      dev.busy = true;
      try {
        const res = await send(d, stopped, 'POST', '/api/voice/start', {
          token: dev.token,
          body: { deviceId: dev.id, userId: 'anna', sessionConfig: { audioFormat: 'opus' } },
        });
        if (!res) {
          // Its id was never learnt, so nothing is owed; it may have replaced the open one.
          for (const s of sessions.values()) if (s.device === dev) s.replaceable = true;
          return;
        }
        if (stopped() && res.status === 409 && /^session '[0-9a-f-]{36}' ended before it started \(service shutdown\)$/.test(res.json?.detail ?? '')) {
          // It replaced the open session, then the shutdown ended its own before the answer.
          tally.refused++;
          for (const s of sessions.values()) if (s.device === dev) s.replaceable = true;
          return;
        }
        if (!answered(res, 200, `start for ${dev.id}`, stopped)) {
          // Refused by the drain while it connected, a start changed nothing: the open session is the
          // shutdown's to end (docs/protocol.md). Only a write the closed store refused came after it.
          if (res.json?.detail !== 'the service is shutting down') for (const s of sessions.values()) if (s.device === dev) s.replaceable = true;
          return;
        }
        // A new start stops the device's open session ('replaced'), durably, before it answers.
        for (const s of sessions.values()) if (s.device === dev && s.stopped === false) sessions.delete(s.id);
        sessions.set(res.json.sessionId, { id: res.json.sessionId, device: dev, token: dev.token, stopped: false });
      } finally {
        dev.busy = false;
      }
    }

    async function stopSession(d: Daemon, s: SessionModel, stopped: () => boolean): Promise<void> {
      s.device.busy = true;
      try {
        const res = await send(d, stopped, 'POST', '/api/voice/stop', { token: s.token, body: { sessionId: s.id } });
        if (!res) {
          s.stopped = 'either';
          return;
        }
        if (!answered(res, 200, `stop ${s.id}`, stopped)) return;
        // During a clean stop the shutdown may have ended it first: the stop answers that final record.
        assert.deepEqual([res.json.state, res.json.endReason], ['Stopped', stopped() && res.json.endReason === 'service shutdown' ? 'service shutdown' : 'stopped by request']);
        s.stopped = true;
        s.endReason = res.json.endReason;
      } finally {
        s.device.busy = false;
      }
    }

    /** The restarted service against the model; the model then takes what is stored as known. */
    async function verify(d: Daemon, cycle: number): Promise<void> {
      const where = `after restart ${cycle} (seed ${SEED})`;
      const leftovers = readdirSync(dataDir).filter((n) => n.includes('.tmp-') || n.startsWith('.voice-hub-check-'));
      assert.deepEqual(leftovers, [], `${where}: temporary files left in the data directory`);

      const list = await call(d.url, 'GET', '/api/device/list', { token: admin });
      assert.equal(list.status, 200, list.text);
      const stored = new Map((list.json.devices as { id: string; name: string; status: string }[]).map((x) => [x.id, x]));
      for (const id of stored.keys()) assert.ok(devices.has(id), `${where}: device ${id} was never registered`);
      for (const dev of devices.values()) {
        const row = stored.get(dev.id);
        if (dev.exists !== 'either') assert.equal(row !== undefined, dev.exists, `${where}: device ${dev.id} should ${dev.exists ? '' : 'not '}be there`);
        if (!row) {
          dev.exists = false;
          continue;
        }
        if (dev.exists === 'either' && dev.token === '') {
          // Registered by a request whose answer the kill took: its token is unknown, so it is deleted.
          const del = await call(d.url, 'DELETE', `/api/device/${dev.id}`, { token: admin });
          assert.equal(del.status, 200, del.text);
          dev.exists = false;
          continue;
        }
        dev.exists = true;
        assert.equal(row.name, dev.name, `${where}: device ${dev.id}'s name`);
        assert.ok(dev.statuses.has(row.status), `${where}: device ${dev.id} has status ${row.status}, none sent since its registration (${[...dev.statuses].join(', ')})`);
        dev.statuses = new Set([row.status]);
        dev.lastStatus = row.status;
      }

      const config = await call(d.url, 'GET', '/api/config/voice', { token: admin });
      assert.equal(config.status, 200, config.text);
      const allowed = [wakeWords, ...(wakeWordsInFlight ? [wakeWordsInFlight] : [])];
      assert.ok(allowed.some((v) => JSON.stringify(v) === JSON.stringify(config.json.wakeWords)), `${where}: wakeWords ${JSON.stringify(config.json.wakeWords)}, answered ${JSON.stringify(wakeWords)}`);
      wakeWords = config.json.wakeWords;
      wakeWordsInFlight = undefined;

      for (const s of [...sessions.values()]) {
        // The session's record, read by a stop (which leaves a stopped one as it was).
        const res = await call(d.url, 'POST', '/api/voice/stop', { token: s.token, body: { sessionId: s.id } });
        const deviceGone = s.device.exists === false || s.device.token !== s.token;
        if (deviceGone) {
          assert.ok(res.status === 401 || res.status === 404, `${where}: session ${s.id} of a deleted device: ${res.status} ${res.text}`);
          sessions.delete(s.id);
          continue;
        }
        assert.equal(res.status, 200, `${where}: session ${s.id}: ${res.text}`);
        const reasons = s.stopped === true ? [s.endReason!] : s.stopped === false ? ['service restarted', 'service shutdown'] : ['stopped by request', 'service restarted', 'service shutdown'];
        if (s.replaceable && s.stopped !== true) reasons.push('replaced');
        assert.equal(res.json.state, 'Stopped', `${where}: session ${s.id}`);
        assert.ok(reasons.includes(res.json.endReason), `${where}: session ${s.id} ended with ${res.json.endReason}, expected one of ${reasons.join(', ')}`);
        sessions.delete(s.id);
      }
    }
  });
});
