// The malloc-tune addon the build ships (src/native/malloc-tune.c, dist/native/): besides the thresholds,
// trim() gives free memory inside the heap back, which the trim threshold cannot (it only returns the
// heap's top). The service calls it periodically; here it runs in this process on holes made on purpose.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { readFileSync } from 'node:fs';
import { GLIBC_TUNABLES_TEXT, tuneMalloc } from '../../src/runtime/malloc-tuning.js';
import { BUNDLE, ROOT } from '../support/service.js';

function rssBytes(): number {
  return process.memoryUsage.rss();
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * RSS before and after `release` runs on `count` 8 KiB heap blocks with every other one freed: below the
 * mmap threshold they come from the heap, and with the last one kept the holes (count / 2 x 8 KiB) are
 * memory no top-of-heap trimming can return.
 */
function holesReleasedBy(release: () => boolean, count: number): { released: boolean; before: number; after: number } {
  let blocks: (Buffer | undefined)[] = Array.from({ length: count }, () => Buffer.allocUnsafeSlow(8 * 1024).fill(1));
  for (let i = 0; i < blocks.length - 1; i += 2) blocks[i] = undefined;
  gc();
  gc();
  const before = rssBytes();
  const released = release();
  const after = rssBytes();
  blocks = [];
  return { released, before, after };
}

describe('malloc trim', () => {
  // First in this process: tuneMalloc sets the start-up thresholds, settle() the steady ones and trims.
  // (Whether the start-up threshold keeps the heap's top cannot be seen from here: something live above
  // the freed blocks keeps it as well. Its effect, brk calls and the time to listen, is in bench/RESULTS.md.)
  it('settle() sets the steady thresholds and gives back what start-up left free', () => {
    const { settle } = tuneMalloc(path.dirname(BUNDLE));
    let problem: string | undefined = 'settle() did not run';
    const { released, before, after } = holesReleasedBy(() => {
      const settled = settle();
      problem = settled.problem;
      return settled.released;
    }, 4_000);
    assert.equal(problem, undefined);
    assert.equal(released, true, 'the trim released nothing');
    assert.ok(before - after > 8 * 1024 * 1024, `RSS ${before} -> ${after}: less than 8 MiB came back`);
  });

  it('gives back the free pages between live heap blocks', () => {
    const { trim } = tuneMalloc(path.dirname(BUNDLE));
    const { released, before, after } = holesReleasedBy(trim, 10_000);
    assert.equal(released, true, 'malloc_trim released nothing');
    assert.ok(before - after > 16 * 1024 * 1024, `RSS ${before} -> ${after}: less than 16 MiB came back`);
  });

  it('the unit sets the thresholds the process sets itself', () => {
    const unit = readFileSync(path.join(ROOT, 'systemd/voice-hub.service'), 'utf8');
    assert.match(unit, new RegExp(`^Environment=${GLIBC_TUNABLES_TEXT.replaceAll('.', '\\.')}$`, 'm'));
  });
});
