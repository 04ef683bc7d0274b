// The executables and Debian packages README.md and docs/*.md name are ones the build makes: each
// `voice-hub-linux-<target>` a key of scripts/sea-runtime.mjs, each `voice-hub_<version>[~legacy]_<arch>.deb`
// that target's architecture (legacy only for a legacy target). The README once listed
// `voice-hub-linux-armv7` and an `armhf` package without `~legacy`: 32-bit ARM has no Node 24 build.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { TARGETS } from '../../scripts/sea-runtime.mjs';
import { REPO_ROOT } from '../support/docs.js';

const DOCS = ['README.md', 'docs/operations.md', 'docs/packaging.md', 'docs/https.md', 'docs/benchmarks.md', 'packaging/deb/voice-hub.1'];

/** `a{b,c}d` as `abd`, `acd`; names here have one brace group at most. */
function expand(name: string): string[] {
  const group = /\{([^{}]*)\}/.exec(name);
  if (!group) return [name];
  return group[1]!.split(',').flatMap((part) => expand(name.slice(0, group.index) + part + name.slice(group.index + group[0].length)));
}

it('every executable and package the docs name is one the build makes', () => {
  const targets = TARGETS as Record<string, { debArch: string }>;
  const executables = new Set(Object.keys(targets).map((key) => `voice-hub-linux-${key}`));
  const packages = new Set(Object.entries(targets).map(([key, t]) => `${key.endsWith('-legacy') ? '~legacy' : ''}_${t.debArch}.deb`));
  const unknown: string[] = [];
  let named = 0;
  for (const file of DOCS) {
    const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
    for (const [written] of text.matchAll(/voice-hub-linux-[A-Za-z0-9{},-]*[A-Za-z0-9}]/g)) {
      for (const name of expand(written)) {
        named++;
        if (!executables.has(name)) unknown.push(`${file}: ${name} (from ${written})`);
      }
    }
    // The version is a placeholder (<version>, <new>) or a release (0.2.0).
    for (const [written, tail] of text.matchAll(/voice-hub_(?:<[a-z]+>|\d+\.\d+\.\d+)((?:~legacy)?_[a-z0-9{},]+\.deb)/g)) {
      for (const name of expand(tail!)) {
        named++;
        if (!packages.has(name)) unknown.push(`${file}: ${name} (from ${written})`);
      }
    }
  }
  assert.ok(named > 10, `found ${named} names`);
  assert.deepEqual(unknown, []);
});
