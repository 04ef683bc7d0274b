// `voice-hub simulate` stopped by a signal (src/cli/sim-interrupt.ts), the built bundle against the
// whole service and the echo server: it prints the report of what ran, deletes the devices it registered
// (else they count against MaxDevices and later runs fail to register) and exits 130 (SIGINT) or 143
// (SIGTERM); against a service that no longer answers, the clean-up is bounded and a second Ctrl-C
// ends it at once.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { call } from '../support/http.js';
import { BUNDLE, ROOT } from '../support/service.js';
import { adminToken } from '../support/tokens.js';
import { startVoiceRig, type VoiceRig } from '../support/voice.js';
import { waitUntil } from '../support/wait.js';

interface Run {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

const running: ChildProcess[] = [];
after(() => {
  for (const proc of running) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
});

function simulate(args: string[]): Run {
  const proc = spawn(process.execPath, [BUNDLE, 'simulate', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(proc);
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
  return { proc, stdout: () => out, stderr: () => err, exited };
}

describe('simulate interrupted, against the service', () => {
  let rig: VoiceRig;
  let admin: string;
  before(async () => {
    // As shipped: 10 devices. Three interrupted runs of 4 used to leave 12 registered.
    rig = await startVoiceRig({ flags: { 'DeviceManagement.MaxDevices': 10 } });
    admin = await adminToken(rig.svc);
  });

  const simulated = async (): Promise<string[]> => {
    const list = await call(rig.svc.url, 'GET', '/api/device/list', { token: admin });
    return list.json.devices.map((d: { id: string }) => d.id).filter((id: string) => id.startsWith('sim-'));
  };

  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGINT', 130]] as const) {
    it(`${signal} while streaming: the report of what ran, its devices deleted, exit ${code}`, async () => {
      const run = simulate(['--url', rig.svc.url, '--devices', '4', '--seconds', '60', '--admin-token', admin]);
      await waitUntil(() => /streaming \d+ packets each/.test(run.stderr()), 'the devices to stream', 15_000);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal((await simulated()).length, 4, 'registered while streaming');
      const sent = Date.now();
      run.proc.kill(signal);
      const end = await run.exited;
      assert.deepEqual({ code: end.code, signal: end.signal }, { code, signal: null }, run.stdout() + run.stderr());
      assert.ok(end.at - sent < 5000, `ended ${end.at - sent} ms after the signal`);
      assert.match(run.stderr(), new RegExp(`^${signal}: stopping; reporting what ran and deleting the devices registered`, 'm'));
      const out = run.stdout();
      assert.match(out, /^voice-hub simulate: 4 device\(s\) x 60 s against /);
      assert.match(out, new RegExp(`^interrupted \\(${signal}\\) after \\d+\\.\\d s of streaming: the counts cover what was due until then$`, 'm'));
      const due = Number(/^packets +(\d+) /m.exec(out)?.[1]);
      assert.ok(due >= 4 * 40 && due < 4 * 3000, `packets due ${due}: about a second's worth per device, not the minute asked for`);
      assert.match(out, /^4 simulated device\(s\) deleted$/m);
      assert.match(out, /^result: INTERRUPTED \(\d+ lost, 0 duplicated, 0 device\(s\) failed\)$/m);
      assert.deepEqual(await simulated(), [], 'no simulated device left registered');
      assert.deepEqual(rig.svc.app.sessions.list(), [], 'no session left running');
    });
  }
});

describe('simulate interrupted, against a service that stopped answering', () => {
  // Takes connections and never answers: the set-up waits, and so would a clean-up without a bound.
  let blackHole: Server;
  let url: string;
  const sockets = new Set<Socket>();
  before(async () => {
    blackHole = createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}`;
  });
  after(() => {
    for (const s of sockets) s.destroy();
    blackHole.close();
  });

  const args = (): string[] => ['--url', url, '--devices', '2', '--seconds', '5', '--admin-token', 'not-checked-here'];

  it('one Ctrl-C during set-up: the clean-up tries to delete the devices whose registration got no answer, for at most 5 s', async () => {
    const earlier = sockets.size;
    const run = simulate(args());
    await waitUntil(() => sockets.size >= earlier + 2, 'the registrations to be sent', 10_000);
    const sent = Date.now();
    run.proc.kill('SIGINT');
    const end = await run.exited;
    assert.equal(end.code, 130, run.stdout() + run.stderr());
    assert.ok(end.at - sent >= 4000 && end.at - sent < 8000, `ended ${end.at - sent} ms after the signal`);
    assert.match(run.stdout(), /^interrupted \(SIGINT\) while setting up: nothing was streamed$/m);
    assert.match(run.stdout(), /^could not delete 2 simulated device\(s\) \(sim-[0-9a-f]{6}-1, sim-[0-9a-f]{6}-2\): The operation was aborted due to timeout$/m);
    assert.match(run.stdout(), /^result: INTERRUPTED \(0 lost, 0 duplicated, 0 device\(s\) failed, 2 device\(s\) left registered\)$/m);
    assert.doesNotMatch(run.stdout(), /device sim-\S+ failed/, 'an interrupted set-up is no failure of a device');
  });

  it('a second Ctrl-C during the clean-up exits at once', async () => {
    const earlier = sockets.size;
    const run = simulate(args());
    await waitUntil(() => sockets.size >= earlier + 2, 'the registrations to be sent', 10_000);
    run.proc.kill('SIGINT');
    await waitUntil(() => /^SIGINT: stopping/m.test(run.stderr()), 'the first signal to be taken', 5000);
    await new Promise((r) => setTimeout(r, 300));
    const sent = Date.now();
    run.proc.kill('SIGINT');
    const end = await run.exited;
    assert.equal(end.code, 130, run.stdout() + run.stderr());
    // Well before the clean-up's 5 s, with room for a loaded machine to start and end a process.
    assert.ok(end.at - sent < 3000, `ended ${end.at - sent} ms after the second signal`);
    assert.match(run.stderr(), /^SIGINT again: exiting without waiting for the clean-up$/m);
  });
});
