// A command whose output is its result has not done its work when that output could not be written:
// `token admin > /dev/full` printed no token and exited 0. Such a failure is one line on stderr and exit
// 74 (EX_IOERR), whichever command wrote the output; a reader that closed the pipe early (`| head`) took
// what it wanted, and that stays quiet with the command's own exit code.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EXIT_IO_ERROR } from '../../src/cli/load.js';
import { BUNDLE } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

before(() => assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run node build.mjs first`));

const FULL = '/dev/full';
const ENV = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };

/** Runs the bundle with its stdout on `stdout` (a descriptor), or on a pipe whose reader is gone before anything is written. */
function run(args: string[], stdout: number | 'closed'): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [BUNDLE, ...args], { env: ENV, stdio: ['ignore', stdout === 'closed' ? 'pipe' : stdout, 'pipe'] });
    if (stdout === 'closed') proc.stdout!.destroy();
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not finish:\n${stderr}`));
    }, 15_000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** A loopback server answering a Healthy report, for `health --url`. */
let server: Server;
let url: string;
before(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'Healthy', totalDuration: '00:00:00.001', entries: {} }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const NO_SPACE = 'cannot write the standard output: no space left on device (ENOSPC); free some space on that file system';

describe('a result that cannot be written: one line naming the command, exit 74', { skip: existsSync(FULL) ? false : `${FULL} is missing` }, () => {
  const cases: [string, () => string[]][] = [
    ['voice-hub token', () => ['token', 'admin', '--data-dir', tmpDir()]],
    ['voice-hub config', () => ['config', 'check', '--data-dir', tmpDir()]],
    ['voice-hub health', () => ['health', '--url', url]],
    // yargs prints these and exits at once, before the failed write has said so.
    ['voice-hub', () => ['--version']],
    ['voice-hub health', () => ['health', '--help']],
  ];
  for (const [who, args] of cases) {
    it(`${args().slice(0, 2).join(' ')} > ${FULL}`, async () => {
      const fd = openSync(FULL, 'w');
      try {
        const res = await run(args(), fd);
        assert.equal(res.code, EXIT_IO_ERROR, res.stderr);
        assert.equal(res.stderr.split('\n').filter((l) => l.includes('standard output')).join('\n'), `${who}: ${NO_SPACE}`);
      } finally {
        closeSync(fd);
      }
    });
  }
});

describe('a reader that closed the pipe early is no failure', () => {
  for (const args of [['config', 'check', '--data-dir', tmpDir()], ['--version'], ['health', '--url', 'URL']]) {
    it(`${args.slice(0, 2).join(' ')} | (closed): the command's own exit code, nothing on stderr`, async () => {
      const res = await run(args.map((a) => (a === 'URL' ? url : a)), 'closed');
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stderr, '');
    });
  }
});
