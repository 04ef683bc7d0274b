// src/runtime/assets.ts without an executable around it: files beside a bundle or in node_modules, the
// payload appended after an ELF (round trip with the build's writer), and the content-addressed addon cache.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { buildPayload, PAYLOAD_MAGIC as WRITER_MAGIC, TRAILER_BYTES as WRITER_TRAILER } from '../../scripts/sea-payload.mjs';
import { runtimeAssets, SQL_WASM, uwsAddonFileName } from '../../src/runtime/asset-manifest.mjs';
import { assertBuildComplete, assetFile, MissingAssetError, missingAssets, nativeCacheDir, openAppendedAssets, PAYLOAD_MAGIC, requireAsset, runsFromExecutable, TRAILER_BYTES, unpackContentAddressed } from '../../src/runtime/assets.js';
import { ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

describe('the asset lookup outside an executable', () => {
  /** A bundle folder laid out as build.mjs lays it out, every asset a few bytes of its name. */
  function fakeBuild(): string {
    const dir = path.join(tmpDir(), 'dist');
    for (const { name } of runtimeAssets(process.arch, process.versions.modules)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), `bytes of ${name}`);
    }
    return dir;
  }

  it('reads each manifest asset beside the bundle, and names no other', () => {
    const dir = fakeBuild();
    writeFileSync(path.join(dir, '..', 'secret'), 'no');
    assert.equal(runsFromExecutable(), false, 'tests run under plain node');
    assert.deepEqual(missingAssets(dir), []);
    assert.equal(requireAsset(SQL_WASM, dir).toString(), `bytes of ${SQL_WASM}`);
    assert.equal(requireAsset('swagger/index.css', dir).toString(), 'bytes of swagger/index.css');
    for (const name of ['../secret', path.join(dir, '..', 'secret'), 'missing.js', 'swagger/../../secret']) {
      assert.throws(() => requireAsset(name, dir), { message: `${name} is not a run-time asset of voice-hub on linux-${process.arch}` });
    }
  });

  it('names the file and the place it looked for when the build lacks one', () => {
    const dir = fakeBuild();
    rmSync(path.join(dir, SQL_WASM));
    rmSync(path.join(dir, 'swagger/index.css'));
    const hint = '(put beside the bundle by node build.mjs)';
    assert.throws(() => requireAsset(SQL_WASM, dir), (e: unknown) => e instanceof MissingAssetError && e.message === `${SQL_WASM} is missing from this build: looked for ${dir}/${SQL_WASM} ${hint}`);
    assert.deepEqual(missingAssets(dir), [`${dir}/${SQL_WASM}`, `${dir}/swagger/index.css`]);
    assert.throws(() => assertBuildComplete(dir), { message: `this build is incomplete: missing ${dir}/${SQL_WASM}, ${dir}/swagger/index.css ${hint}` });
    const addon = `native/${uwsAddonFileName(process.arch, process.platform, process.versions.modules)}`;
    assert.equal(assetFile(addon, dir), path.join(dir, addon), 'files outside an executable are used where they lie');
    rmSync(path.join(dir, addon));
    assert.throws(() => assetFile(addon, dir), { message: `${addon} is missing from this build: looked for ${dir}/${addon} ${hint}` });
  });

  it('takes the manifest source in node_modules under development (no bundle folder)', () => {
    assert.deepEqual(missingAssets(undefined), []);
    assert.doesNotThrow(() => assertBuildComplete(undefined));
    for (const { name, source } of runtimeAssets(process.arch, process.versions.modules)) {
      if (!source) continue; // compiled by the build (our own addon): nothing to take under tsx
      assert.ok(requireAsset(name, undefined).equals(readFileSync(path.join(ROOT, 'node_modules', source))), name);
    }
  });
});

describe('the manifest per runtime', () => {
  it('names the uWS addon of the arch and module ABI, and refuses a runtime without one', () => {
    const addon = (arch: string, abi: string): string | undefined => runtimeAssets(arch, abi).find((a) => a.name.startsWith('native/uws_'))?.source;
    assert.equal(addon('x64', '115'), 'uWebSockets.js/binaries/uws_linux_x64_115.node');
    assert.equal(addon('arm', '115'), 'uWebSockets.js/binaries/uws_linux_arm_115.node');
    assert.equal(addon('arm64', '137'), 'uWebSockets.js-node24/uws_linux_arm64_137.node');
    const known = 'voice-hub has them for ABI 115 (x64, arm64, arm), 137 (x64, arm64)';
    assert.throws(() => runtimeAssets('arm', '137'), { message: `no uWebSockets.js addon for Node module ABI 137 on linux-arm; ${known}` });
    assert.throws(() => runtimeAssets('x64', '127'), { message: `no uWebSockets.js addon for Node module ABI 127 on linux-x64; ${known}` });
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
    const { offset, length, sha256 } = assets.entries.get('native/uws_linux_arm_115.node')!;
    assert.deepEqual(readFileSync(file).subarray(offset, offset + length), addon);
    assert.equal(sha256, createHash('sha256').update(addon).digest('hex'), 'the build records each asset\'s SHA-256');
    assert.equal(assets.entries.get('sql-wasm.wasm')!.offset, elf.length, 'entries start right after the ELF');
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

/** Unpacks `bytes` as an executable would an asset whose hash and length the build recorded. */
const writeContentAddressed = (dir: string, fileName: string, bytes: Buffer): string =>
  unpackContentAddressed(dir, fileName, { length: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }, () => bytes);

describe('content-addressed addon cache', () => {
  it('an addon already unpacked under its hash is used as it is, without reading it from the executable', () => {
    const dir = path.join(tmpDir(), 'cache');
    const bytes = Buffer.from('native code v1');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const first = unpackContentAddressed(dir, 'uws_linux_x64_115.node', { length: bytes.length, sha256 }, () => bytes);
    assert.equal(path.basename(first), `uws_linux_x64_115-${sha256.slice(0, 16)}.node`);
    let reads = 0;
    const again = unpackContentAddressed(dir, 'uws_linux_x64_115.node', { length: bytes.length, sha256 }, () => {
      reads++;
      return bytes;
    });
    assert.equal(again, first);
    assert.equal(reads, 0);
  });

  it('unpacks no bytes whose hash is not the one the build recorded', () => {
    const dir = path.join(tmpDir(), 'cache');
    const sha256 = createHash('sha256').update('the real addon').digest('hex');
    assert.throws(
      () => unpackContentAddressed(dir, 'a.node', { length: 5, sha256 }, () => Buffer.from('other')),
      { message: `a.node inside ${process.execPath} is damaged: its SHA-256 is ${createHash('sha256').update('other').digest('hex')}, the build recorded ${sha256}` },
    );
    assert.deepEqual(readdirSync(dir), []);
  });

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

  it('removes the same addon built for another Node ABI (an upgrade to the Node 24 package), and no other addon', () => {
    const dir = path.join(tmpDir(), 'cache');
    const old = writeContentAddressed(dir, 'uws_linux_x64_115.node', Buffer.from('node 20 build'));
    const ours = writeContentAddressed(dir, 'opus_decode_linux_x64.node', Buffer.from('opus'));
    const other = writeContentAddressed(dir, 'uws_linux_arm64_115.node', Buffer.from('another arch'));
    const current = writeContentAddressed(dir, 'uws_linux_x64_137.node', Buffer.from('node 24 build'));
    assert.deepEqual(readdirSync(dir).sort(), [ours, other, current].map((f) => path.basename(f)).sort());
    assert.ok(!readdirSync(dir).includes(path.basename(old)));
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

  it('makes a relative CACHE_DIRECTORY or TMPDIR absolute, from the working directory', () => {
    assert.equal(nativeCacheDir({ CACHE_DIRECTORY: 'cache:other' }), path.join(process.cwd(), 'cache'));
    const tmp = process.env.TMPDIR;
    process.env.TMPDIR = 'tmp';
    try {
      assert.equal(nativeCacheDir({}), path.join(process.cwd(), 'tmp', `voice-hub-${process.getuid!()}`));
    } finally {
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
    }
  });
});
