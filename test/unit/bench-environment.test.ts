// The benchmark starts the service and its baselines with the environment a systemd unit gives, not the one
// it was started from: a NODE_EXTRA_CA_CERTS inherited from a shell (this CI machine sets one) makes every
// node parse the system's CA certificates at start, which the rows would count against the service.
import assert from 'node:assert/strict';
import { test } from 'node:test';

test('processes the bench starts do not inherit node variables from its own environment', async (t) => {
  // Set before bench/lib/proc.ts is loaded: it reads the environment once.
  process.env.NODE_EXTRA_CA_CERTS = '/etc/ssl/certs/ca-certificates.crt';
  process.env.NODE_OPTIONS = '--max-old-space-size=64';
  process.env.VOICE_HUB_BENCH_TEST_STRAY = 'stray';
  const { ProcessSet, RUN_ENV } = await import('../../bench/lib/proc.js');
  const procs = new ProcessSet();
  t.after(() => procs.killAll());

  const child = procs.spawn(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(process.env))']);
  assert.equal(await child.exited, 0);
  const seen = JSON.parse(child.output()) as Record<string, string>;

  assert.equal(seen.NODE_EXTRA_CA_CERTS, undefined);
  assert.equal(seen.NODE_OPTIONS, undefined);
  assert.equal(seen.VOICE_HUB_BENCH_TEST_STRAY, undefined);
  // What a unit's service has stays: the path to find programs by, and the rest of RUN_ENV as given.
  assert.equal(seen.PATH, process.env.PATH);
  for (const [key, value] of Object.entries(RUN_ENV)) assert.equal(seen[key], value, key);
});

test('measured services start with the Node options users run them with; a build may add its own for node', async () => {
  const { ProcessSet } = await import('../../bench/lib/proc.js');
  const { parseBuild } = await import('../../bench/lib/builds.js');
  const { NODE_FLAGS, NODE_OPTIONS_TEXT } = await import('../../src/runtime/node-options.mjs');
  const procs = new ProcessSet();
  assert.deepEqual(procs.runtimeFlags, [...NODE_FLAGS]);
  assert.deepEqual(procs.serviceNodeFlags, []);
  assert.deepEqual(procs.executableEnv(), { NODE_OPTIONS: NODE_OPTIONS_TEXT });
  // `npm run bench -- --node-flag` comes after them, for the executable's NODE_OPTIONS too.
  procs.runtimeFlags.push('--v8-pool-size=4');
  assert.deepEqual(procs.executableEnv(), { NODE_OPTIONS: '--v8-pool-size=0 --v8-pool-size=4' });
  assert.deepEqual(parseBuild('nodedefault=/tmp/x --VoiceService.DecoderThreads 0 node:--v8-pool-size=4'), {
    name: 'nodedefault', dir: '/tmp/x', flags: ['--VoiceService.DecoderThreads', '0'], nodeFlags: ['--v8-pool-size=4'],
  });
  assert.equal(parseBuild('--rounds'), undefined);
});
