// src/runtime/code-cache.ts: the executables' V8 code cache of the program, written after start and taken
// at the next one; a damaged, foreign or unsafe one is never handed to V8. Each start is a process of its
// own, as in an executable: within one process V8 compiles a source it has seen from its own cache and
// never looks at the one it is given.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Script } from 'node:vm';
import { ROOT, runProcess } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const MODULE = path.join(ROOT, 'src/runtime/code-cache.ts');

/** A program of its own for each test (V8 would otherwise find it compiled in the test runner too). */
const program = (factor = 6): string => `// ${randomBytes(8).toString('hex')}\nconsole.log('answer', (function answer(n) { return n * ${factor}; })(7));\n`;

interface Start {
  /** What V8 was given: `none`, `taken` or `refused`. */
  cache: string;
  file: string;
  answer: number;
  warnings: string[];
}

/** Compiles and runs `source` in a new process as the executable's loader does, writing the cache at once. */
async function start(dir: string, source: string): Promise<Start> {
  const code = `
    import { Script } from 'node:vm';
    import { ProgramCodeCache } from ${JSON.stringify(MODULE)};
    const source = ${JSON.stringify(source)};
    const cache = new ProgramCodeCache(${JSON.stringify(dir)}, source);
    const script = new Script(source, { filename: 'program.js', cachedData: cache.data });
    script.runInThisContext();
    console.log('cache', cache.data === undefined ? 'none' : script.cachedDataRejected ? 'refused' : 'taken');
    console.log('file', cache.file);
    cache.saveLater(script, (m) => console.log('warning', m), 0);
    setTimeout(() => {}, 50);`;
  const res = await runProcess(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code]);
  assert.equal(res.code, 0, res.stderr);
  const lines = res.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)] as const);
  const one = (key: string): string => lines.find(([k]) => k === key)?.[1] ?? '';
  return { cache: one('cache'), file: one('file'), answer: Number(one('answer')), warnings: lines.filter(([k]) => k === 'warning').map(([, v]) => v) };
}

describe('the program code cache', () => {
  it('is written after a start without one, and taken by V8 at the next start, which leaves it as it is', async () => {
    const dir = path.join(tmpDir(), 'cache');
    const source = program();
    const first = await start(dir, source);
    assert.deepEqual([first.cache, first.answer, first.warnings], ['none', 42, []]);
    assert.deepEqual(readdirSync(dir), [path.basename(first.file)], 'no temp file left behind');
    assert.match(path.basename(first.file), /^program-[0-9a-f]{16}\.v8cache$/);
    assert.equal(statSync(first.file).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const written = statSync(first.file);

    const second = await start(dir, source);
    assert.deepEqual([second.cache, second.answer, second.file], ['taken', 42, first.file]);
    const after = statSync(first.file);
    assert.deepEqual([after.ino, after.mtimeMs], [written.ino, written.mtimeMs], 'a cache that was taken is not written again');
  });

  it('is not handed to V8 when a byte of it changed or it was cut short, and is written anew', async () => {
    const damages: Array<(b: Buffer) => Buffer> = [
      (b) => { const i = b.length >> 1; b.writeUInt8(b.readUInt8(i) ^ 0x40, i); return b; },
      (b) => b.subarray(0, b.length - 100),
      (b) => b.subarray(0, 20),
    ];
    for (const damage of damages) {
      const dir = path.join(tmpDir(), 'cache');
      const source = program();
      const { file } = await start(dir, source);
      const sound = readFileSync(file);
      writeFileSync(file, damage(Buffer.from(sound)));
      const next = await start(dir, source);
      assert.deepEqual([next.cache, next.answer], ['none', 42]);
      assert.equal((await start(dir, source)).cache, 'taken', 'written anew, whole');
    }
  });

  it('is kept per program: another program of the same length does not take it, and writing its own removes the old one', async () => {
    const dir = path.join(tmpDir(), 'cache');
    const source = program(6);
    const first = await start(dir, source);
    const other = await start(dir, source.replace('n * 6', 'n * 2'));
    assert.deepEqual([other.cache, other.answer], ['none', 14]);
    assert.notEqual(other.file, first.file);
    assert.deepEqual(readdirSync(dir), [path.basename(other.file)]);
  });

  it('is rewritten when V8 refuses it, and a refused cache changes nothing the program does', async () => {
    const dir = path.join(tmpDir(), 'cache');
    const source = program();
    const { file } = await start(dir, source);
    // Sound on disk (its digest matches) but not V8's: made for another source.
    const foreign = new Script(`1 + ${randomBytes(4).readUInt32LE()}`, { filename: 'other.js' }).createCachedData();
    writeFileSync(file, Buffer.concat([createHash('sha256').update(foreign).digest(), foreign]));
    const next = await start(dir, source);
    assert.deepEqual([next.cache, next.answer], ['refused', 42]);
    assert.equal((await start(dir, source)).cache, 'taken', 'replaced by the program\'s own');
  });

  it('is neither read from nor written to a folder others can write, and says why it was not written', async () => {
    const source = program();
    const { file } = await start(path.join(tmpDir(), 'own'), source);
    const shared = path.join(tmpDir(), 'shared');
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o777);
    writeFileSync(path.join(shared, path.basename(file)), readFileSync(file));
    const next = await start(shared, source);
    assert.equal(next.cache, 'none', 'a sound cache in a shared folder is not read');
    assert.deepEqual(next.warnings, [`the program's code cache was not written to ${shared}: ${shared} is writable by others (mode 777)`]);
  });
});
