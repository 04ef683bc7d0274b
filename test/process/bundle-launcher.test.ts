// `node dist/voice-hub.cjs` is a launcher (src/runtime/bundle-main.ts) that runs the program beside it,
// dist/program.cjs, with the V8 code cache of its last start, as the single executables do.
import assert from 'node:assert/strict';
import { chmodSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { call } from '../support/http.js';
import { BUNDLE, copyBundle, runProcess, spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';
import { sleep, waitUntil } from '../support/wait.js';
import { CODE_CACHE_DELAY_MS, isCodeCacheFile } from '../../src/runtime/code-cache.js';

describe('the bundle and its launcher', () => {
  it('starts from the code cache of the program it wrote in CACHE_DIRECTORY at its last start', async () => {
    const cache = tmpDir();
    const dataDir = tmpDir();
    const args = ['--data-dir', dataDir, '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false'];
    const cacheFile = (): string | undefined => readdirSync(cache).find(isCodeCacheFile);
    const first = await spawnService(args, { CACHE_DIRECTORY: cache });
    await waitUntil(() => cacheFile() !== undefined, 'the code cache written', CODE_CACHE_DELAY_MS + 15_000, 100);
    first.proc.kill('SIGTERM');
    assert.equal(await first.exited, 0, first.output());
    const written = statSync(path.join(cache, cacheFile()!));
    assert.ok(written.size > 100_000, `a code cache of the whole start: ${written.size} bytes`);
    assert.equal(written.mode & 0o777, 0o600);

    const second = await spawnService(args, { CACHE_DIRECTORY: cache });
    assert.equal((await call(second.url, 'GET', '/health')).status, 200);
    await sleep(CODE_CACHE_DELAY_MS + 2_000);
    const now = statSync(path.join(cache, cacheFile()!));
    // Written again only when V8 refused it.
    assert.deepEqual([now.ino, now.mtimeMs], [written.ino, written.mtimeMs], 'the cache was taken');
    second.proc.kill('SIGTERM');
    assert.equal(await second.exited, 0, second.output());
    assert.doesNotMatch(second.output(), /warning/);
  });

  it('starts without a word when its cache file is damaged, and writes a sound one', async () => {
    const cache = tmpDir();
    const args = ['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false'];
    const cacheFile = (): string | undefined => readdirSync(cache).find(isCodeCacheFile);
    const first = await spawnService(args, { CACHE_DIRECTORY: cache });
    await waitUntil(() => cacheFile() !== undefined, 'the code cache written', CODE_CACHE_DELAY_MS + 15_000, 100);
    first.proc.kill('SIGTERM');
    assert.equal(await first.exited, 0, first.output());
    const file = path.join(cache, cacheFile()!);
    writeFileSync(file, Buffer.alloc(statSync(file).size, 0x5a), { mode: 0o600 });
    const damaged = statSync(file);

    const second = await spawnService(args, { CACHE_DIRECTORY: cache });
    assert.equal((await call(second.url, 'GET', '/health')).status, 200);
    await waitUntil(() => statSync(file).ino !== damaged.ino, 'the cache written anew', CODE_CACHE_DELAY_MS + 15_000, 100);
    second.proc.kill('SIGTERM');
    assert.equal(await second.exited, 0, second.output());
    assert.doesNotMatch(second.output(), /warning/);
  });

  it('warns, and goes on serving, when the cache folder is not one it may trust', async () => {
    const cache = tmpDir();
    chmodSync(cache, 0o777);
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '', '--VoiceService.EnableVoice', 'false'], { CACHE_DIRECTORY: cache });
    await waitUntil(() => /code cache/.test(svc.output()), 'the warning', CODE_CACHE_DELAY_MS + 15_000, 100);
    assert.match(svc.output(), new RegExp(`warning: the program's code cache was not written to ${cache}: ${cache} is writable by others \\(mode 777\\)\\n`));
    assert.equal((await call(svc.url, 'GET', '/health')).status, 200);
    assert.deepEqual(readdirSync(cache).filter(isCodeCacheFile), []);
    svc.proc.kill('SIGTERM');
    assert.equal(await svc.exited, 0, svc.output());
  });

  it('refuses to start without the program beside it, naming the file', async () => {
    const dir = tmpDir();
    const launcher = copyBundle(dir);
    rmSync(path.join(dir, 'program.cjs'));
    const res = await runProcess(process.execPath, [launcher, '--version'], { env: { PATH: process.env.PATH ?? '' } });
    assert.equal(res.code, 1);
    assert.equal(res.stdout, '');
    assert.equal(res.stderr, `start-up failed: the program ${path.join(dir, 'program.cjs')} could not be read (not found): this build is incomplete (run node build.mjs)\n`);
  });


  it('loads the program through Node\'s own loader under --enable-source-maps: stack traces name the sources', async () => {
    // A preload that prints where stdout is written from: yargs' --version, inside the program.
    const dir = tmpDir();
    const preload = path.join(dir, 'where.cjs');
    writeFileSync(preload, "const write = process.stdout.write.bind(process.stdout);\nprocess.stdout.write = (...a) => { process.stderr.write(new Error('where').stack + '\\n'); return write(...a); };\n");
    const frames = async (flags: string[]): Promise<string> => {
      const res = await runProcess(process.execPath, [...flags, '-r', preload, BUNDLE, '--version'], { env: { PATH: process.env.PATH ?? '', CACHE_DIRECTORY: dir } });
      assert.equal(res.code, 0, res.stderr);
      return res.stderr;
    };
    assert.match(await frames(['--enable-source-maps']), /at .*node_modules\/yargs\/build\/lib\/yargs-factory\.js:\d+:\d+\)/);
    assert.match(await frames([]), /at .*dist\/program\.cjs:\d+:\d+\)/);
  });
});
