// What ends a command when it fails: the top-level catch of src/main.ts prints one line for a failure
// the operator can act on. Expected are the system's refusals (a file or folder this user may not read,
// a full or read-only disk, a port in use: errors with a `syscall`) and a data file the service will not
// use (DataFileError: the database, the signing key; its message says what to do); anything else is a
// programming error: one line too, exit 70, and its stack (what a bug report needs) at the Debug or Trace
// log level, which a technician is asked to set when reporting it.
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { getSystemErrorMap } from 'node:util';
import { findPortOwner, PortInUseError } from '../process/port-owner.js';
import { isSecret } from './command.js';
import { DataFileError, errorText } from '../errors.js';
import { oneLine } from '../log/logger.js';
import { CliExit, EXIT_DATA, EXIT_IN_USE, EXIT_SOFTWARE } from './load.js';

type SystemError = NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string; dest?: string };

const isSystemError = (e: unknown): e is SystemError => e instanceof Error && typeof (e as SystemError).syscall === 'string' && typeof (e as SystemError).code === 'string';

/** What to do about a system error, by its code. A code not here gets the advice for what it names (fallbackAdvice). */
const ADVICE: Readonly<Record<string, string>> = {
  EACCES: 'run it as the user the service runs as (sudo -u voice-hub voice-hub ...), or give this user access',
  EPERM: 'run it as the user the service runs as (sudo -u voice-hub voice-hub ...), or give this user access',
  ENOSPC: 'free some space on that file system',
  EDQUOT: 'free some space on that file system, or raise the quota',
  EROFS: 'that file system is read-only: choose a writable folder (--data-dir, Storage.DataDir)',
  EADDRNOTAVAIL: 'that address is not one of this machine\'s: choose another (--host)',
  ENOENT: 'check the path, or create what is missing',
  ENOTDIR: 'a part of that path is a file, not a folder: check the path',
  EISDIR: 'that is a folder: give the path of a file',
  ELOOP: 'a symbolic link on that path leads back to itself or through too many others: fix the link, or give the path it should lead to',
  ENAMETOOLONG: 'a name on that path is longer than 255 bytes, or the whole path longer than 4095: choose a shorter path',
  EMFILE: 'this process has as many files open as it may: raise its limit (LimitNOFILE in the unit, ulimit -n)',
  ENFILE: 'the system has as many files open as it may: stop what holds them, or raise fs.file-max',
  EIO: 'the device failed to read or write: check the disk and the kernel log (dmesg)',
  EBUSY: 'something else is using it: stop that, or choose another path',
  ETXTBSY: 'something else is using it: stop that, or choose another path',
  EEXIST: 'something is already there: remove it, or choose another path',
  ENXIO: 'nothing is attached to that device or FIFO: check the path',
  ENOTFOUND: 'check the name\'s spelling, or give an IP address',
  EAI_AGAIN: 'the name server did not answer: check the network and DNS, or give an IP address',
  EAI_FAIL: 'the name server failed: check the network and DNS, or give an IP address',
};

/** For a code ADVICE has no words for: what to check, by what the error names. */
function fallbackAdvice(e: SystemError): string {
  if (e.path !== undefined) return 'check that path and this user\'s access to it';
  if (e.hostname !== undefined || e.address !== undefined || e.port !== undefined) return 'check the address and port (--host, --port) and the network';
  return 'if the cause does not say what to change, report it with this line';
}

/** A system call as the operator knows what it did: `cannot getaddrinfo x` said less than `cannot resolve x`. */
const SYSCALL_WORDS: Readonly<Record<string, string>> = { getaddrinfo: 'resolve', getnameinfo: 'resolve' };

/** A port below 1024 is what a user may not listen on; running as another user does not help with that. */
const listenEaccesAdvice = (choose: string): string =>
  `ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port from 1024 (${choose}), or give the service that capability (the package ships a drop-in for port 80)`;

/**
 * The exit for an expected failure (see above), or undefined for a bug (internalFailure).
 * `choose`: where the port of a refused listen is set (src/process/ownership.ts, configuredPorts).
 */
export function expectedFailure(e: unknown, who = 'voice-hub', choose = '--port'): CliExit | undefined {
  if (e instanceof CliExit) return e;
  if (e instanceof DataFileError) return new CliExit(EXIT_DATA, `${who}: ${e.message}`);
  if (!isSystemError(e)) return undefined;
  if (e.code === 'EADDRINUSE' && e.port !== undefined) {
    const host = e.address ?? '0.0.0.0';
    return new CliExit(EXIT_IN_USE, `${who}: ${new PortInUseError(host, findPortOwner(e.port, isSecret), choose).message}`);
  }
  return new CliExit(1, `${who}: ${systemFailure(e, choose)}`);
}

/**
 * What the engine or Node throws for a mistake in the code (a TypeError reading a property of undefined
 * or for an argument of the wrong type, a RangeError of a runaway recursion, a ReferenceError), or a
 * throw of no Error at all: a bug wherever it comes from. The service's own refusals are Error itself,
 * its own classes or the system's errors, worded for an operator.
 */
export function isCodingError(e: unknown): boolean {
  return !(e instanceof Error) || [TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError].some((c) => e instanceof c);
}

/** How the one line of an internal error says where its stack is. */
const STACK_HINT = 'Logging__LogLevel__Default=Debug in the environment prints its stack';

/**
 * The exit for a failure no command foresaw (a bug): exit 70 and one line naming the error, or with
 * `withStack` its stack after it. A stack by default reads as a crash report and buries the one line.
 */
export function internalFailure(e: unknown, withStack: boolean): CliExit {
  const stack = withStack && e instanceof Error ? e.stack : undefined;
  const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  const first = `voice-hub: internal error (a bug: please report it${stack ? '' : `; ${STACK_HINT}`}): ${what}`;
  if (stack === undefined) return new CliExit(EXIT_SOFTWARE, first);
  // The stack's frames, each a line of its own; its head repeats the message, which is one line above.
  const at = stack.indexOf('\n    at ');
  const frames = stack.startsWith(what) ? stack.slice(what.length) : at < 0 ? '' : stack.slice(at);
  return new CliExit(EXIT_SOFTWARE, [first, ...frames.split('\n').filter((l) => l.trim() !== '')]);
}

/**
 * Logging.LogLevel.Default as the environment sets it (`Logging__LogLevel__Default`, or with `:`, in any
 * case, as the configuration reads it): what asks for an internal error's stack before, or without, any
 * configuration being read.
 */
export function environmentLogLevel(env: NodeJS.ProcessEnv): string | undefined {
  const name = Object.keys(env).find((k) => /^logging(__|:)loglevel(__|:)default$/i.test(k));
  return name === undefined ? undefined : env[name];
}

/** Debug and Trace, in any case, as the configuration accepts them. */
export const asksForStacks = (level: string | undefined): boolean => level !== undefined && /^\s*(debug|trace)\s*$/i.test(level);

/**
 * `cannot <syscall> <what>: <cause> (<code>); <advice>`, always naming what failed (the file, the host name,
 * the address and port) and what to do; `path` names the file where the error names none (a write).
 */
function systemFailure(e: SystemError, choose = '--port', path = e.path): string {
  const what = path ?? e.hostname ?? (e.port !== undefined ? `${e.address ?? ''}:${e.port}` : e.address);
  const cause = (e.errno !== undefined ? getSystemErrorMap().get(e.errno)?.[1] : undefined) ?? e.message;
  const advice = e.syscall === 'listen' && e.code === 'EACCES' ? listenEaccesAdvice(choose) : (e.code ? ADVICE[e.code] : undefined) ?? fallbackAdvice({ ...e, path, message: e.message });
  return `cannot ${SYSCALL_WORDS[e.syscall!] ?? e.syscall}${what ? ` ${what}` : ''}: ${cause} (${e.code}); ${advice}`;
}

/** `cannot write <what>: <cause> (<code>); <advice>` for a failed write to what names no file (the standard output). */
export function writeFailureText(e: unknown, what: string): string {
  return isSystemError(e) ? systemFailure(e, undefined, what) : `cannot write ${what}: ${errorText(e)}`;
}

/** `cannot <syscall> <file>: <cause> (<code>); <advice>` for a file system's refusal, else undefined. */
export function systemFailureText(e: unknown): string | undefined {
  return isSystemError(e) ? systemFailure(e) : undefined;
}

const CHOOSE_DIR = 'choose another folder (--data-dir, Storage.DataDir)';
const NO_NEW_FILES = 'it is on a file system that takes no new files (such as /proc or /sys)';

/** The nearest of `dir` and its parents that exists, with what it is. */
function nearestExisting(dir: string): { path: string; isDirectory: boolean } | undefined {
  for (let p = path.resolve(dir); ; p = path.dirname(p)) {
    try {
      return { path: p, isDirectory: statSync(p).isDirectory() };
    } catch {
      if (p === path.dirname(p)) return undefined;
    }
  }
}

/**
 * The first folder on the way to `dir` (itself included) that is a symbolic link leading round in a loop,
 * if any: every file opened in or below it says ELOOP, which names the file, not the folder that loops.
 */
function loopingFolder(dir: string): string | undefined {
  const target = path.resolve(dir);
  for (let end = target.indexOf(path.sep, 1); ; end = target.indexOf(path.sep, end + 1)) {
    const at = end < 0 ? target : target.slice(0, end);
    try {
      statSync(at);
    } catch (e) {
      if (isSystemError(e) && e.code === 'ELOOP') return at;
    }
    if (end < 0) return undefined;
  }
}

/**
 * Why the data directory `dir` could not be made or locked (`file`: the lock file), in one line that names
 * the file and what to do. The system's own words misled here: making the folders (makeDirs) says
 * EEXIST or ENOTDIR for a path that is or lies below a file, naming the path it tried, not the file,
 * and a failed write names no file.
 */
export function dataDirFailure(dir: string, file: string, e: unknown): string {
  if (!isSystemError(e)) return errorText(e);
  if (e.code === 'ELOOP') {
    const loop = loopingFolder(dir);
    if (loop) return `${loop} is a symbolic link that leads round in a loop (too many symbolic links, ELOOP); ${CHOOSE_DIR}`;
  }
  // The folder, or one above it, is a file: whatever was tried in it (make it, open a file in it) said ENOTDIR.
  if (e.code === 'ENOTDIR' || e.code === 'EEXIST') {
    const found = nearestExisting(dir);
    if (found && !found.isDirectory) return `${found.path} is a file, not a folder; ${CHOOSE_DIR}`;
  }
  if ((e.syscall === 'mkdir' || e.syscall === 'stat') && (e.code === 'EEXIST' || e.code === 'ENOTDIR' || e.code === 'ENOENT' || e.code === 'EROFS')) {
    const found = nearestExisting(dir);
    if (found && !found.isDirectory) return `${found.path} is a file, not a folder; ${CHOOSE_DIR}`;
    if (found && (e.code === 'ENOENT' || e.code === 'EROFS')) {
      try {
        accessSync(found.path, constants.W_OK);
      } catch (denied) {
        if (isSystemError(denied) && denied.code === 'EROFS') return `cannot create it in ${found.path}: that file system is read-only (EROFS); ${CHOOSE_DIR}, or mount it writable`;
        if (isSystemError(denied)) return `cannot create it in ${found.path}: ${systemFailure(denied).replace(/^cannot \S+ \S+: /, '')}`;
      }
    }
  }
  // Creating a file in a folder that exists failed as if the folder did not: a file system that takes no
  // new files (/proc, /sys). The system's words name a temporary file and say nothing to do.
  if (e.code === 'ENOENT' && e.syscall === 'open' && nearestExisting(dir)?.path === path.resolve(dir)) {
    return `cannot create files in ${dir}: no such file or directory (ENOENT), though the folder exists: ${NO_NEW_FILES}; ${CHOOSE_DIR}`;
  }
  // The same for a folder made in one that exists (mkdir /proc/x).
  if (e.code === 'ENOENT' && e.syscall === 'mkdir' && e.path !== undefined && nearestExisting(e.path)?.path === path.dirname(path.resolve(e.path))) {
    return `cannot mkdir ${e.path}: no such file or directory (ENOENT), though ${path.dirname(path.resolve(e.path))} exists: ${NO_NEW_FILES}; ${CHOOSE_DIR}`;
  }
  return systemFailure(e, undefined, e.path ?? file);
}
