// "Each fact written once": the text of a missing device or session is one function's (devices/registry.ts
// deviceNotFound, voice/sessions.ts sessionNotFound), which the API's 404 and the hub's completion errors
// both use; copies of it drift apart.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';

const SRC = path.resolve(import.meta.dirname, '../../src');

it('the text of a device or session that does not exist is built in one place each', () => {
  const files = fs.readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const [what, owner] of [['device', 'devices/registry.ts'], ['session', 'voice/sessions.ts']] as const) {
    const pattern = new RegExp(`\`${what} '\\$\\{[^}]+\\}' does not exist\``, 'g');
    const places = files.flatMap((f) => (fs.readFileSync(path.join(SRC, f), 'utf8').match(pattern) ?? []).map(() => f.split(path.sep).join('/')));
    assert.deepEqual(places, [owner], what);
  }
});
