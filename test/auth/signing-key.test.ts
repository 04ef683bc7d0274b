// The signing key file in the data directory, which the service's user can write: read only from a
// regular file of its own, never through a symbolic link (a link to /etc/passwd had that file read as
// the key and its mode set to 0600 by whoever ran the command, root for `sudo voice-hub token`).
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadSigningKey, SIGNING_KEY_FILE } from '../../src/auth/signing-key.js';

describe('the signing key file', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'voice-hub-key-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const dataDir = (): string => {
    const dir = path.join(root, String(n++));
    mkdirSync(dir);
    return dir;
  };

  it('is generated once, 0600, and read back the same', () => {
    const dir = dataDir();
    const key = loadSigningKey('', dir);
    assert.equal(statSync(path.join(dir, SIGNING_KEY_FILE)).mode & 0o777, 0o600);
    assert.deepEqual(loadSigningKey('', dir), key);
    assert.deepEqual(loadSigningKey('', dir, { create: false }), key);
  });

  it('copied in with loose permissions is tightened to 0600', () => {
    const dir = dataDir();
    const file = path.join(dir, SIGNING_KEY_FILE);
    writeFileSync(file, `${'k'.repeat(44)}\n`);
    chmodSync(file, 0o644);
    assert.equal(new TextDecoder().decode(loadSigningKey('', dir)), 'k'.repeat(44));
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('a symbolic link is refused, and the file it points to is neither read nor changed', () => {
    const dir = dataDir();
    const victim = path.join(root, `victim-${n}`);
    writeFileSync(victim, `${'v'.repeat(44)}\n`);
    chmodSync(victim, 0o644);
    symlinkSync(victim, path.join(dir, SIGNING_KEY_FILE));
    const refused = `signing key file ${path.join(dir, SIGNING_KEY_FILE)} is a symbolic link: refused; put the key file itself there`;
    assert.throws(() => loadSigningKey('', dir), { message: refused });
    assert.throws(() => loadSigningKey('', dir, { create: false }), { message: refused });
    assert.equal(statSync(victim).mode & 0o777, 0o644);
    assert.equal(readFileSync(victim, 'utf8'), `${'v'.repeat(44)}\n`);
  });

  it('a directory is refused', () => {
    const dir = dataDir();
    mkdirSync(path.join(dir, SIGNING_KEY_FILE));
    assert.throws(() => loadSigningKey('', dir), { message: `signing key file ${path.join(dir, SIGNING_KEY_FILE)} is not a regular file: refused` });
  });

  it('a file far larger than a key is refused without reading it whole', () => {
    const dir = dataDir();
    writeFileSync(path.join(dir, SIGNING_KEY_FILE), Buffer.alloc(1024 * 1024, 0x6b));
    assert.throws(() => loadSigningKey('', dir), {
      message: `signing key file ${path.join(dir, SIGNING_KEY_FILE)} is damaged (more than 4096 bytes, a key has 44); remove it to generate a new one (all issued tokens become invalid)`,
    });
  });

  it('temporary files a crash left while creating it are removed and reported, beside a key or before a new one', () => {
    for (const existing of [true, false]) {
      const dir = dataDir();
      const file = path.join(dir, SIGNING_KEY_FILE);
      if (existing) writeFileSync(file, `${'k'.repeat(44)}\n`);
      writeFileSync(`${file}.tmp-999999`, '');
      writeFileSync(`${file}.tmp-other`, 'not ours');
      const removed: string[] = [];
      const key = new TextDecoder().decode(loadSigningKey('', dir, { removed: (name) => removed.push(name) }));
      assert.deepEqual(removed, [`${SIGNING_KEY_FILE}.tmp-999999`]);
      assert.deepEqual(readdirSync(dir).sort(), [SIGNING_KEY_FILE, `${SIGNING_KEY_FILE}.tmp-other`]);
      assert.equal(key, existing ? 'k'.repeat(44) : readFileSync(file, 'utf8').trim());
    }
  });

  it('beside a running service (create: false) nothing is removed', () => {
    const dir = dataDir();
    const file = path.join(dir, SIGNING_KEY_FILE);
    writeFileSync(file, `${'k'.repeat(44)}\n`);
    writeFileSync(`${file}.tmp-999999`, '');
    loadSigningKey('', dir, { create: false });
    assert.deepEqual(readdirSync(dir).sort(), [SIGNING_KEY_FILE, `${SIGNING_KEY_FILE}.tmp-999999`]);
  });
});
