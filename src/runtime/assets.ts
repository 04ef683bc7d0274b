// The one lookup for the files the service needs at run time (the assets of src/runtime/asset-manifest.mjs:
// sql.js wasm, the uWS native addon, Swagger UI), wherever this process finds them.
//
// Sources, decided once per process:
//   appended  a single executable: the build appends the assets (and the program, which sea-main.ts
//             compiles from there) after the ELF in the layout of scripts/sea-payload.mjs, read back here
//             from process.execPath with pread, so they never become pages of this process
//             (scripts/build-binaries.mjs says what SEA assets cost).
//   files     `node dist/voice-hub.cjs`: the file of that name beside the bundle, as build.mjs copies it;
//             under tsx (development, tests) the file in node_modules the manifest names.
// An executable uses only what it carries: files lying beside it are never read, and one whose payload
// is gone does not start.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROGRAM_ASSET, runtimeAssets, SQL_WASM, type RuntimeAsset } from './asset-manifest.mjs';
import { errorText } from '../errors.js';
import { assertPrivateDir, removeSuperseded, writePrivateFile } from './private-dir.js';

/** Trailer at the very end of an executable with appended assets; see scripts/sea-payload.mjs. */
export const PAYLOAD_MAGIC = 'VHASSET1';
export const TRAILER_BYTES = 24;

/** Where an appended asset lies in the executable, and the SHA-256 (hex) the build took of it. */
interface AppendedEntry {
  readonly offset: number;
  readonly length: number;
  readonly sha256: string;
}

interface AppendedAssets {
  /** The executable they were read from: the program file, which is not always process.execPath. */
  readonly file: string;
  readonly fd: number;
  readonly entries: ReadonlyMap<string, AppendedEntry>;
}

type Source = { kind: 'appended'; assets: AppendedAssets } | { kind: 'files' };

/**
 * Reads the asset index appended to `file`, or undefined when it carries none. The descriptor stays
 * open: an upgrade that replaces the executable on disk must not change what this process reads.
 */
export function openAppendedAssets(file: string): AppendedAssets | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    if (size < TRAILER_BYTES) throw new Error('too small');
    const trailer = Buffer.alloc(TRAILER_BYTES);
    readSync(fd, trailer, 0, TRAILER_BYTES, size - TRAILER_BYTES);
    if (trailer.toString('latin1', 0, 8) !== PAYLOAD_MAGIC) throw new Error('no payload');
    const indexLength = trailer.readUInt32LE(8);
    const payloadLength = Number(trailer.readBigUInt64LE(16));
    const start = size - TRAILER_BYTES - payloadLength;
    if (start < 0 || indexLength > payloadLength) throw new Error(`damaged asset payload in ${file}`);
    const index = Buffer.alloc(indexLength);
    readSync(fd, index, 0, indexLength, start + payloadLength - indexLength);
    const raw = JSON.parse(index.toString('utf8')) as Record<string, [number, number, string]>;
    const entries = new Map<string, AppendedEntry>();
    for (const [name, [offset, length, sha256]] of Object.entries(raw)) {
      if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`damaged asset payload in ${file}: ${name} has no SHA-256`);
      entries.set(name, { offset: start + offset, length, sha256 });
    }
    return { file, fd, entries };
  } catch (e) {
    closeSync(fd);
    if (e instanceof Error && e.message.startsWith('damaged')) throw e;
    return undefined;
  }
}

function readAppended(assets: AppendedAssets, name: string): Buffer | undefined {
  const entry = assets.entries.get(name);
  if (!entry) return undefined;
  const out = Buffer.alloc(entry.length);
  let done = 0;
  while (done < out.length) {
    const n = readSync(assets.fd, out, done, out.length - done, entry.offset + done);
    if (n === 0) throw new Error(`asset ${name} is cut short in ${assets.file}`);
    done += n;
  }
  return out;
}

// The source is a fact about the executable this process runs, so it is looked up once.
let source: Source | undefined;

function currentSource(): Source {
  if (source) return source;
  const assets = openAppendedAssets(process.execPath);
  if (assets) return (source = { kind: 'appended', assets });
  if (runsAsSingleExecutable()) {
    // Started through an explicit dynamic loader (`ld-linux-x86-64.so.2 ./voice-hub-linux-x64`, as on a
    // machine whose own glibc is too old), process.execPath names the loader, not the program.
    const program = mappedProgram() ?? process.execPath;
    const found = program === process.execPath ? undefined : openAppendedAssets(program);
    if (found) return (source = { kind: 'appended', assets: found });
    throw new Error(`${program} carries no assets: the payload the build appends after the program is missing (was the file stripped or cut short?)`);
  }
  return (source = { kind: 'files' });
}

/**
 * The file of the lowest executable mapping of this process: the program, which the kernel or the
 * dynamic loader maps below the loader and the shared libraries (the official x64 build is not position
 * independent and sits at 0x400000; the loader and the libraries are mapped high).
 */
function mappedProgram(): string | undefined {
  try {
    for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
      const m = /^[0-9a-f]+-[0-9a-f]+ ..x. \S+ \S+ \S+\s+(\/.*)$/.exec(line);
      if (m) return m[1];
    }
  } catch {
    // no /proc: then only process.execPath is known
  }
  return undefined;
}

/**
 * Set by the single executable's main script (sea-main.ts) before anything else: it and the program it
 * runs each bundle a copy of this module, and both read this one global flag. node:sea says the same
 * from Node 20.12 on, but armv7's runtime is 20.11: without the flag a cut-off payload was reported as
 * a missing program, and a start through an explicit dynamic loader failed.
 */
const SINGLE_EXECUTABLE = Symbol.for('voice-hub.single-executable');

export function markSingleExecutable(): void {
  (globalThis as Record<symbol, unknown>)[SINGLE_EXECUTABLE] = true;
}

/** True inside a single executable. */
function runsAsSingleExecutable(): boolean {
  if ((globalThis as Record<symbol, unknown>)[SINGLE_EXECUTABLE] === true) return true;
  try {
    return (createRequire(import.meta.url)('node:sea') as typeof import('node:sea')).isSea();
  } catch {
    return false;
  }
}

/** An asset carried inside this executable, never a file on disk. */
function embeddedAsset(name: string): Buffer | undefined {
  const src = currentSource();
  return src.kind === 'appended' ? readAppended(src.assets, name) : undefined;
}

/** Where the executable holds `name`, and its recorded hash, without copying it out. */
function appendedEntry(name: string): AppendedEntry | undefined {
  const src = currentSource();
  return src.kind === 'appended' ? src.assets.entries.get(name) : undefined;
}

/**
 * The file of the program this process runs: the single executable that carries the assets, else
 * process.execPath (node, for the bundle). Started through an explicit dynamic loader, process.execPath
 * names the loader: what is "beside the program" (config/appsettings.json) and the path the program
 * runs as are the executable's, not the loader's.
 */
export function programFile(): string {
  const src = currentSource();
  return src.kind === 'appended' ? src.assets.file : process.execPath;
}

/** The program's code inside this single executable (src/runtime/sea-main.ts runs it). */
export function embeddedProgram(): Buffer {
  const program = embeddedAsset(PROGRAM_ASSET);
  if (!program) throw new Error(`${programFile()} does not carry the program (${PROGRAM_ASSET}) among its assets`);
  return program;
}

/** Whether this process runs from a single executable that carries its assets. */
export function runsFromExecutable(): boolean {
  return currentSource().kind !== 'files';
}

/** The bundle's folder when this code runs as `node dist/voice-hub.cjs`; undefined under tsx (development, tests). */
export const BUNDLE_DIR: string | undefined = typeof __dirname === 'string' ? __dirname : undefined;

/** A file the program needs is not where this build keeps it. */
export class MissingAssetError extends Error {
  constructor(readonly asset: string, readonly where: string, hint: string) {
    super(`${asset} is missing from this build: looked for ${where} (${hint})`);
    this.name = 'MissingAssetError';
  }
}

/** The manifest's assets for this process: its arch and its Node's module ABI (which uWS addon). */
function ownAssets(): readonly RuntimeAsset[] {
  return runtimeAssets(process.arch, process.versions.modules);
}

/** The manifest entry of `name` for this process, or a thrown error for a name that is not an asset. */
function manifestEntry(name: string): RuntimeAsset {
  const entry = ownAssets().find((a) => a.name === name);
  if (!entry) throw new Error(`${name} is not a run-time asset of voice-hub on ${process.platform}-${process.arch}`);
  return entry;
}

interface Location {
  readonly kind: 'embedded' | 'file';
  /** What was looked at, for messages: a path, or the asset's key inside the executable. */
  readonly where: string;
  /** What puts it there. */
  readonly hint: string;
  readonly file?: string;
}

/**
 * Where this process keeps asset `name`, one place per way of running: inside the single executable
 * (and nowhere else: a file lying beside it is never used); `<bundleDir>/<name>` for the bundle, as
 * build.mjs lays it out; under development (no bundleDir, tests under tsx) the manifest's source file
 * in node_modules.
 */
function location(name: string, bundleDir: string | undefined): Location {
  const entry = manifestEntry(name);
  if (runsFromExecutable()) {
    return { kind: 'embedded', where: `asset ${name} inside ${programFile()}`, hint: 'embedded by scripts/build-binaries.mjs' };
  }
  if (bundleDir !== undefined) {
    const file = path.join(path.resolve(bundleDir), name);
    return { kind: 'file', where: file, hint: 'put beside the bundle by node build.mjs', file };
  }
  if (!entry.source) {
    return { kind: 'file', where: `${name} (compiled from ${entry.built} by node build.mjs; none under tsx)`, hint: 'run the bundle or an executable' };
  }
  const from = fileURLToPath(import.meta.url);
  const hint = 'installed by npm ci';
  // Looked up as a file in each node_modules folder Node would search, not resolved as a module: a
  // package's `exports` may hide its addons from require.resolve (the Node 24 uWS package does).
  for (const dir of createRequire(from).resolve.paths(entry.source) ?? []) {
    const file = path.join(dir, entry.source);
    if (existsSync(file)) return { kind: 'file', where: file, hint, file };
  }
  return { kind: 'file', where: `node_modules/${entry.source} (resolved from ${path.dirname(from)})`, hint };
}

/**
 * The bytes of asset `name` (a name of src/runtime/asset-manifest.mjs, such as `sql-wasm.wasm` or
 * `swagger/index.css`). Throws MissingAssetError, naming where it looked, when the build lacks it.
 */
export function requireAsset(name: string, bundleDir: string | undefined = BUNDLE_DIR): Buffer {
  const loc = location(name, bundleDir);
  if (loc.kind === 'embedded') {
    const bytes = embeddedAsset(name);
    if (!bytes) throw new MissingAssetError(name, loc.where, loc.hint);
    return bytes;
  }
  try {
    if (loc.file) return readFileSync(loc.file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  throw new MissingAssetError(name, loc.where, loc.hint);
}

/**
 * A path on disk holding asset `name`, for what only loads from a file (a native addon): the file itself
 * outside an executable; inside one, the embedded bytes unpacked into `cacheDir` (see unpackContentAddressed).
 */
export function assetFile(name: string, bundleDir: string | undefined = BUNDLE_DIR, cacheDir: string = nativeCacheDir()): string {
  const loc = location(name, bundleDir);
  if (loc.kind === 'embedded') {
    const entry = appendedEntry(name);
    if (!entry) throw new MissingAssetError(name, loc.where, loc.hint);
    try {
      return unpackContentAddressed(cacheDir, path.basename(name), entry, () => requireAsset(name, bundleDir));
    } catch (e) {
      // The folder is the likely cause (read-only, full, a file, another user's): say which and what to do.
      const fsProblem = (e as NodeJS.ErrnoException).code !== undefined || errorText(e).startsWith(cacheDir);
      if (!fsProblem) throw e;
      throw new Error(`cannot unpack ${name} into the cache directory ${cacheDir} (${errorText(e)}): it must be a writable directory of this user that nobody else can write; set CACHE_DIRECTORY (systemd's CacheDirectory=) or TMPDIR to one`);
    }
  }
  if (!loc.file || !existsSync(loc.file)) throw new MissingAssetError(name, loc.where, loc.hint);
  return loc.file;
}

/** Every asset of the manifest this process lacks, each as the place it looked at. */
export function missingAssets(bundleDir: string | undefined = BUNDLE_DIR): string[] {
  const missing: string[] = [];
  for (const { name, source } of ownAssets()) {
    // Under tsx nothing is compiled: only what node_modules provides can be asked of development.
    if (!source && bundleDir === undefined && !runsFromExecutable()) continue;
    const loc = location(name, bundleDir);
    const present = loc.kind === 'embedded' ? appendedEntry(name) !== undefined : loc.file !== undefined && existsSync(loc.file);
    if (!present) missing.push(loc.where);
  }
  return missing;
}

/**
 * Throws, naming every missing asset and where it was looked for, unless this build is complete:
 * called at start-up, so a build without a file fails at once instead of at the first request for it.
 */
export function assertBuildComplete(bundleDir: string | undefined = BUNDLE_DIR): void {
  const missing = missingAssets(bundleDir);
  if (missing.length === 0) return;
  const { hint } = location(SQL_WASM, bundleDir);
  throw new Error(`this build is incomplete: missing ${missing.join(', ')} (${hint})`);
}

/**
 * Where unpacked native code goes: systemd's CacheDirectory=, else a private folder in the temp dir;
 * absolute, from the working directory at start: a relative one (TMPDIR=tmp by hand) gave a relative
 * addon path, which createRequire refuses, and the executable did not start.
 */
export function nativeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  // With several CacheDirectory= entries systemd joins them with ':'; the first is ours.
  const systemd = env.CACHE_DIRECTORY?.split(':')[0];
  if (systemd) return path.resolve(systemd);
  return path.resolve(os.tmpdir(), `voice-hub-${process.getuid?.() ?? 'user'}`);
}

/**
 * `<base>-<first 16 hex of sha256><ext>` in the private folder `dir`: taken as it is when a regular file
 * of this user by that name has the expected length, else written from `read()` (checked against the
 * hash) through a synced temp file and a rename, so a file under the name is whole even after a power
 * cut. A start thus finds its addon by name instead of reading megabytes out of the executable to hash
 * and compare them (70-80 ms per start for the uWS addon on the 2-core x64 bench machine). Older
 * versions of the same base name, or of the same addon for another Node ABI, are removed. Returns the
 * file's path.
 */
export function unpackContentAddressed(
  dir: string, fileName: string, expected: { length: number; sha256: string }, read: () => Buffer,
): string {
  const ext = path.extname(fileName);
  const base = fileName.slice(0, fileName.length - ext.length);
  const name = `${base}-${expected.sha256.slice(0, 16)}${ext}`;
  // The same addon built for another Node ABI (`uws_linux_x64_115` after an upgrade to the Node 24
  // package's `_137`) is an older version too: 7 MB each, left behind at every such upgrade.
  const family = /^(.+)_\d+$/.exec(base)?.[1];
  const otherAbi = (other: string): boolean => {
    if (family === undefined || !other.startsWith(`${family}_`)) return false;
    const abi = other.slice(family.length + 1, other.indexOf('-', family.length + 1));
    return abi !== '' && [...abi].every((c) => c >= '0' && c <= '9');
  };
  const supersedes = (other: string): boolean => other.endsWith(ext) && (other.startsWith(`${base}-`) || otherAbi(other));
  assertPrivateDir(dir, true);
  const target = path.join(dir, name);
  if (isOwnFileOfLength(target, expected.length)) {
    removeSuperseded(dir, name, supersedes);
    return target;
  }
  const bytes = read();
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== expected.sha256) throw new Error(`${fileName} inside ${programFile()} is damaged: its SHA-256 is ${actual}, the build recorded ${expected.sha256}`);
  return writePrivateFile(dir, name, bytes, 0o500, supersedes);
}

function isOwnFileOfLength(file: string, length: number): boolean {
  try {
    const st = lstatSync(file);
    const uid = process.getuid?.();
    return st.isFile() && st.size === length && (uid === undefined || st.uid === uid);
  } catch {
    return false;
  }
}
