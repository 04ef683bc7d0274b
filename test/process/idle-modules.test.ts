// What an idle service has loaded: the built bundle as users start it, with a preload that writes the
// Node built-in modules loaded so far to a file every 100 ms. The upstream client (ws, and with it
// node:http, https, tls and zlib), the Node worker threads of the wasm decoder and the systemd notifier's
// child process are loaded by their first use, not at start: together about 1 MiB of idle RSS. So are
// the program's parts (src/runtime/asset-manifest.mjs, PROGRAM_PARTS): packages bundled apart from the
// program, whose source V8 would otherwise hold for the life of every process (about 1 MiB of idle RSS).
// Node's assert (yargs checks with it), fs/promises (with the readline interface, watchers and
// directory iterator it loads) and perf_hooks (the `performance` global's; src/monotonic-clock.ts) are
// not loaded by the service at all, busy or idle: 0.8 MiB of RSS.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PROGRAM_PARTS } from '../../src/runtime/asset-manifest.mjs';
import { call } from '../support/http.js';
import { startMosquitto } from '../support/mosquitto.js';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { startEcho } from '../support/voice.js';
import { Subscriber } from '../mqtt/helpers.js';

const DEFERRED = ['http', 'https', 'tls', 'zlib', 'worker_threads', 'child_process'];
/**
 * Modules the service does without: yargs' assert is loaded only to throw, the store calls node:fs on
 * descriptors, durations are read from process.hrtime.
 */
const UNUSED = ['assert', 'fs/promises', 'internal/readline/interface', 'perf_hooks'];

/**
 * A preload writing the loaded built-ins, and the files Node's loader has loaded (`parts/mqtt.cjs` for
 * a part beside the bundle), one per line to `file`, and the reader of that file.
 */
function moduleWatch(): { env: Record<string, string>; loaded: (awaited?: readonly string[]) => Promise<Set<string>> } {
  const dir = tmpDir();
  const file = path.join(dir, 'modules.txt');
  const preload = path.join(dir, 'watch.cjs');
  writeFileSync(preload, `
const { renameSync, writeFileSync } = require('node:fs');
const path = require('node:path');
const files = () => Object.keys(require.cache).map((f) => path.relative(path.dirname(process.mainModule?.filename ?? ''), f));
// Written beside and renamed over: a reader never sees the file truncated and half written.
const write = () => {
  writeFileSync(${JSON.stringify(file + '.new')}, [...process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)), ...files()].join('\\n'));
  renameSync(${JSON.stringify(file + '.new')}, ${JSON.stringify(file)});
};
setInterval(write, 100).unref();
`);
  return {
    env: { NODE_OPTIONS: `--require ${preload}` },
    // Two writes after the caller's last step, so that the list includes what that step loaded; what
    // the caller awaits in it, up to 10 s more (the service's timer runs late on a loaded machine).
    loaded: async (awaited = []) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.ok(existsSync(file), 'the preload wrote its list');
      const read = (): Set<string> => new Set(readFileSync(file, 'utf8').split('\n'));
      for (let waited = 0; waited < 10_000 && !awaited.every((m) => read().has(m)); waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return read();
    },
  };
}

describe('modules an idle service loads', () => {
  it('leaves ws and its HTTP stack, worker threads and child processes until a session or probe needs them', async () => {
    const echo = await startEcho();
    const watch = moduleWatch();
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '', '--VoiceService.ServerUrl', `ws://127.0.0.1:${echo.port}/voice`], watch.env);
    // A device registers and the API answers: still nothing of the deferred set.
    const reg = await call(svc.url, 'POST', '/api/device/register', { body: { deviceId: 'idle-1', deviceName: 'Idle', deviceType: 'speaker' } });
    assert.equal(reg.status, 200, reg.text);
    const idle = await watch.loaded();
    assert.ok(idle.has('net'), 'the list is real: net is loaded at start');
    assert.ok(idle.has('voice-hub.cjs'), 'the list is real: it names the bundle');
    assert.deepEqual(DEFERRED.filter((m) => idle.has(m)), []);
    assert.deepEqual(UNUSED.filter((m) => idle.has(m)), []);
    assert.deepEqual(PROGRAM_PARTS.filter((p) => idle.has(p.name)), []);

    // The first voice session opens the upstream link through ws, which brings node:http with it.
    const start = await call(svc.url, 'POST', '/api/voice/start', { body: { deviceId: 'idle-1' }, token: reg.json.deviceToken });
    assert.equal(start.status, 200, start.text);
    const active = await watch.loaded(['http', 'zlib']);
    assert.ok(active.has('http') && active.has('zlib'), 'ws and its modules are loaded by the session');
    assert.deepEqual(UNUSED.filter((m) => active.has(m)), []);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('loads ws for the voice health probe alone, and the probe works', async () => {
    const echo = await startEcho();
    const watch = moduleWatch();
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '', '--VoiceService.ServerUrl', `ws://127.0.0.1:${echo.port}/voice`], watch.env);
    assert.equal((await watch.loaded()).has('http'), false);
    const health = await call(svc.url, 'GET', '/health');
    assert.equal(health.status, 200, health.text);
    assert.equal(health.json.entries['voice-service'].status, 'Healthy');
    const probed = await watch.loaded(['http']);
    assert.equal(probed.has('http'), true);
    assert.deepEqual(UNUSED.filter((m) => probed.has(m)), []);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0);
  });

  it('loads the MQTT part with the first broker connection, and no other part', async () => {
    const broker = await startMosquitto();
    const sub = await Subscriber.connect(broker.port, ['#']);
    try {
      const watch = moduleWatch();
      const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '127.0.0.1', '--Mqtt.Port', String(broker.port), '--VoiceService.ServerUrl', 'ws://127.0.0.1:9/voice'], watch.env);
      // The hub's own state, published over the connection the part's client made.
      const online = await sub.waitFor((m) => m.payload === 'online', 'the hub publishing that it is online');
      assert.match(online.topic, /\/status$/);
      const loaded = await watch.loaded();
      assert.deepEqual(PROGRAM_PARTS.filter((p) => loaded.has(p.name)).map((p) => p.name), ['parts/mqtt.cjs']);
      assert.deepEqual(UNUSED.filter((m) => loaded.has(m)), []);
      svc.proc.kill('SIGTERM');
      assert.equal(await svc.exited, 0, svc.output());
    } finally {
      await sub.end();
      await broker.stop();
    }
  });
});
