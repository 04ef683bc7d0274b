// Child processes: an acknowledged insert survives SIGKILL right after the acknowledgement, and the
// flush timer never keeps a process alive.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { device, open } from './helpers.js';
import { scratchDir } from '../support/tmp.js';

const storeUrl = pathToFileURL(fileURLToPath(new URL('../../src/store/index.ts', import.meta.url))).href;
const loggerUrl = pathToFileURL(fileURLToPath(new URL('../../src/log/logger.ts', import.meta.url))).href;

/** Runs ES module code in a child node with tsx; calls `onLine` per stdout line; resolves with the exit. */
function runChild(code: string, onLine: (line: string, kill: () => void) => void, timeoutMs = 20_000) {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let buffered = '';
  child.stdout.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      onLine(buffered.slice(0, nl), () => child.kill('SIGKILL'));
      buffered = buffered.slice(nl + 1);
    }
  });
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

test('an insert acknowledged to a process killed right after survives', async () => {
  const dir = await scratchDir();
  try {
    const code = `
      const { openStore } = await import(${JSON.stringify(storeUrl)});
      const { silentLogger } = await import(${JSON.stringify(loggerUrl)});
      const store = await openStore({ dataDir: ${JSON.stringify(dir.path)}, flushIntervalMs: 60000, logger: silentLogger });
      await store.devices.insert(${JSON.stringify(device('dev-killed'))});
      process.stdout.write('acked\\n');
      setInterval(() => {}, 1000); // stay alive until killed
    `;
    let acked = false;
    const exit = await runChild(code, (line, kill) => {
      if (line === 'acked') {
        acked = true;
        kill();
      }
    });
    assert.ok(acked, `child never acknowledged: ${exit.stderr}`);
    assert.equal(exit.signal, 'SIGKILL');
    const store = await open(dir.path);
    assert.deepEqual(store.devices.get('dev-killed'), device('dev-killed'));
    await store.close();
  } finally {
    await dir.cleanup();
  }
});

test('a pending flush timer does not keep the process alive', async () => {
  const dir = await scratchDir();
  try {
    const code = `
      const { openStore } = await import(${JSON.stringify(storeUrl)});
      const { silentLogger } = await import(${JSON.stringify(loggerUrl)});
      const store = await openStore({ dataDir: ${JSON.stringify(dir.path)}, flushIntervalMs: 3600000, logger: silentLogger });
      await store.devices.insert(${JSON.stringify(device('dev-1'))});
      store.devices.updateTelemetry('dev-1', ${JSON.stringify({ ...device('x'), status: 'busy' })});
      process.stdout.write('queued\\n');
    `;
    const lines: string[] = [];
    const exit = await runChild(code, (line) => lines.push(line), 15_000);
    assert.deepEqual(lines, ['queued']);
    assert.equal(exit.signal, null, 'the child had to be killed: the timer kept it alive');
    assert.equal(exit.code, 0, exit.stderr);
  } finally {
    await dir.cleanup();
  }
});
