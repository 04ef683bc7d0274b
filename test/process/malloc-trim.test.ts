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

describe('malloc trim', () => {
  // First in this process: tuneMalloc sets the start-up thresholds, settle() the steady ones and trims.
  // (Whether the start-up threshold keeps the heap's top cannot be seen from here: something live above
  // the freed blocks keeps it as well. Its effect, brk calls and the time to listen, is in bench/RESULTS.md.)
  it('settle() sets the steady thresholds and gives back what start-up left free', () => {
    const { settle } = tuneMalloc(path.dirname(BUNDLE));
    let blocks: (Buffer | undefined)[] = Array.from({ length: 4_000 }, () => Buffer.allocUnsafeSlow(8 * 1024).fill(1));
    for (let i = 0; i < blocks.length - 1; i += 2) blocks[i] = undefined;
    gc();
    gc();
    const before = rssBytes();
    assert.equal(settle(), true, 'glibc refused the steady thresholds, or the trim released nothing');
    const after = rssBytes();
    assert.ok(before - after > 8 * 1024 * 1024, `RSS ${before} -> ${after}: less than 8 MiB came back`);
    blocks = [];
  });

  it('gives back the free pages between live heap blocks', () => {
    const { trim } = tuneMalloc(path.dirname(BUNDLE));
    // 8 KiB blocks come from the heap (below the mmap threshold); freeing every other one, with
    // the last one kept, leaves ~40 MiB of holes that no top-of-heap trimming can return.
    let blocks: (Buffer | undefined)[] = Array.from({ length: 10_000 }, () => Buffer.allocUnsafeSlow(8 * 1024).fill(1));
    for (let i = 0; i < blocks.length - 1; i += 2) blocks[i] = undefined;
    gc();
    gc();
    const before = rssBytes();
    assert.equal(trim(), true, 'malloc_trim released nothing');
    const after = rssBytes();
    assert.ok(before - after > 16 * 1024 * 1024, `RSS ${before} -> ${after}: less than 16 MiB came back`);
    blocks = [];
  });

  it('the unit sets the thresholds the process sets itself', () => {
    const unit = readFileSync(path.join(ROOT, 'systemd/voice-hub.service'), 'utf8');
    assert.match(unit, new RegExp(`^Environment=${GLIBC_TUNABLES_TEXT.replaceAll('.', '\\.')}$`, 'm'));
  });
});
