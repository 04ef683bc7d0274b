// Durations are measured on the monotonic clock (performance.now(), timers), never as a difference of
// wall-clock readings: a Raspberry Pi has no real-time clock, and NTP moves its wall clock by hours or days
// while the service runs (test/voice/wall-clock-jump.test.ts shows what went wrong). Date.now() is allowed
// only where a wall-clock instant is what is meant; each such use is listed here with its reason.
// Reads src/ only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** File -> why its Date.now() reads the wall clock. */
const WALL_CLOCK_USES: Record<string, string> = {
  'auth/tokens.ts': "a token's iat and exp are instants that other readers of the token compare with their own clocks (RFC 7519)",
  'wiring/endpoints.ts': "compares the HTTPS certificate's end date, a calendar instant, with today",
};

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sources(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

test('Date.now() appears in src/ only where a wall-clock instant is meant', () => {
  const found = sources(SRC)
    .filter((file) => /\bDate\.now\b/.test(fs.readFileSync(file, 'utf8')))
    .map((file) => path.relative(SRC, file).split(path.sep).join('/'))
    .sort();
  assert.deepEqual(found, Object.keys(WALL_CLOCK_USES).sort());
});
