// src/runtime/assets.ts without an executable around it: files beside a bundle, the payload appended
// after an ELF (round trip with the build's writer), and the content-addressed addon cache.
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { buildPayload, PAYLOAD_MAGIC as WRITER_MAGIC, TRAILER_BYTES as WRITER_TRAILER } from '../../scripts/sea-payload.mjs';
import { extractNativeAddon, nativeCacheDir, openAppendedAssets, PAYLOAD_MAGIC, readAsset, runsFromExecutable, TRAILER_BYTES, writeContentAddressed } from '../../src/runtime/assets.js';
import { tmpDir } from '../support/tmp.js';

describe('readAsset from files beside the bundle', () => {
  it('reads names below the bundle folder and nothing outside it', () => {
    const dir = tmpDir();
    mkdirSync(path.join(dir, 'bundle/swagger-ui'), { recursive: true });
    writeFileSync(path.join(dir, 'bundle/sql-wasm.wasm'), 'wasm');
    writeFileSync(path.join(dir, 'bundle/swagger-ui/index.css'), 'css');
    writeFileSync(path.join(dir, 'secret'), 'no');
    assert.equal(runsFromExecutable(), false, 'tests run under plain node');
    assert.equal(readAsset('sql-wasm.wasm', path.join(dir, 'bundle'))?.toString(), 'wasm');
    assert.equal(readAsset('swagger-ui/index.css', path.join(dir, 'bundle'))?.toString(), 'css');
    assert.equal(readAsset('../secret', path.join(dir, 'bundle')), undefined);
    assert.equal(readAsset(path.join(dir, 'secret'), path.join(dir, 'bundle')), undefined);
    assert.equal(readAsset('missing.js', path.join(dir, 'bundle')), undefined);
    assert.equal(readAsset('sql-wasm.wasm', undefined), undefined);
  });

  it('has no embedded addon to extract under plain node', () => {
    assert.equal(extractNativeAddon('uws_linux_x64_115.node', tmpDir()), undefined);
  });
});

describe('assets appended after an executable', () => {
  const elf = Buffer.concat([Buffer.from('\x7fELF'), Buffer.alloc(4096, 7)]);

  it('reads back what the build appended, by name, and only that', () => {
    assert.equal(PAYLOAD_MAGIC, WRITER_MAGIC);
    assert.equal(TRAILER_BYTES, WRITER_TRAILER);
    const file = path.join(tmpDir(), 'exe');
    const wasm = Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]);
    const addon = Buffer.alloc(100_000, 0xab);
    writeFileSync(file, Buffer.concat([elf, buildPayload([['sql-wasm.wasm', wasm], ['native/uws_linux_arm_115.node', addon], ['empty', Buffer.alloc(0)]])]));
    const assets = openAppendedAssets(file);
    assert.ok(assets);
    assert.deepEqual([...assets.entries.keys()], ['sql-wasm.wasm', 'native/uws_linux_arm_115.node', 'empty']);
    const [offset, length] = assets.entries.get('native/uws_linux_arm_115.node')!;
    assert.deepEqual(readFileSync(file).subarray(offset, offset + length), addon);
    assert.equal(assets.entries.get('sql-wasm.wasm')![0], elf.length, 'entries start right after the ELF');
  });

  it('finds nothing in a plain executable', () => {
    const file = path.join(tmpDir(), 'exe');
    writeFileSync(file, elf);
    assert.equal(openAppendedAssets(file), undefined);
    assert.equal(openAppendedAssets(process.execPath), undefined);
    assert.equal(openAppendedAssets(path.join(tmpDir(), 'missing')), undefined);
  });

  it('refuses a trailer that points before the start of the file', () => {
    const file = path.join(tmpDir(), 'exe');
    const payload = buildPayload([['a', Buffer.from('x')]]);
    payload.writeBigUInt64LE(1n << 40n, payload.length - 8);
    writeFileSync(file, Buffer.concat([elf, payload]));
    assert.throws(() => openAppendedAssets(file), /damaged asset payload/);
  });
});

describe('content-addressed addon cache', () => {
  it('writes once under a hash of the content, read-only, and reuses it', () => {
    const dir = path.join(tmpDir(), 'cache');
    const bytes = Buffer.from('native code v1');
    const first = writeContentAddressed(dir, 'uws_linux_x64_115.node', bytes);
    assert.match(path.basename(first), /^uws_linux_x64_115-[0-9a-f]{16}\.node$/);
    assert.deepEqual(readFileSync(first), bytes);
    assert.equal(statSync(first).mode & 0o777, 0o500);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const inode = statSync(first).ino;
    assert.equal(writeContentAddressed(dir, 'uws_linux_x64_115.node', bytes), first);
    assert.equal(statSync(first).ino, inode, 'an identical file is not written again');
  });

  it('replaces a damaged file and removes older versions, leaving no temp files', () => {
    const dir = path.join(tmpDir(), 'cache');
    const v1 = writeContentAddressed(dir, 'uws_linux_x64_115.node', Buffer.from('v1'));
    chmodSync(v1, 0o600);
    writeFileSync(v1, 'v1 cut');
    assert.equal(writeContentAddressed(dir, 'uws_linux_x64_115.node', Buffer.from('v1')), v1);
    assert.equal(readFileSync(v1).toString(), 'v1');
    const v2 = writeContentAddressed(dir, 'uws_linux_x64_115.node', Buffer.from('v2'));
    assert.notEqual(v2, v1);
    assert.deepEqual(readdirSync(dir), [path.basename(v2)]);
  });

  it('refuses a folder others can write to, or a symlink', () => {
    const shared = path.join(tmpDir(), 'shared');
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o777);
    assert.throws(() => writeContentAddressed(shared, 'a.node', Buffer.from('x')), /writable by others/);
    const real = path.join(tmpDir(), 'real');
    mkdirSync(real, { mode: 0o700 });
    const link = path.join(tmpDir(), 'link');
    symlinkSync(real, link);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.throws(() => writeContentAddressed(link, 'a.node', Buffer.from('x')), /not a directory/);
  });

  it('uses systemd\'s CACHE_DIRECTORY, else a per-user folder in the temp dir', () => {
    assert.equal(nativeCacheDir({ CACHE_DIRECTORY: '/var/cache/voice-hub:/var/cache/other' }), '/var/cache/voice-hub');
    assert.match(nativeCacheDir({}), new RegExp(`/voice-hub-${process.getuid!()}$`));
  });
});
