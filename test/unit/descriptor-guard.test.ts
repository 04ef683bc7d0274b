// DescriptorGuard on its own: when it stops and resumes accepting, what it logs, and the limit's parsing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DescriptorGuard, descriptorLimit, reserveOf, type AcceptSwitch } from '../../src/process/descriptor-guard.js';
import { createLogger } from '../../src/log/logger.js';

function setup(limit: number) {
  const lines: string[] = [];
  const logger = createLogger({ levels: { Default: 'Debug' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  const calls: string[] = [];
  let listenable = true;
  const listener: AcceptSwitch = {
    pause: () => void calls.push('pause'),
    resume: async () => {
      calls.push('resume');
      return listenable;
    },
  };
  const state = { open: 10 };
  const guard = new DescriptorGuard({ limit, count: () => state.open, listeners: [listener, listener], logger });
  return { guard, lines, calls, state, setListenable: (v: boolean) => (listenable = v) };
}

describe('DescriptorGuard', () => {
  it('keeps a reserve of a 64th of the limit, at least 32', () => {
    assert.equal(reserveOf(256), 32);
    assert.equal(reserveOf(1024), 32);
    assert.equal(reserveOf(524_288), 8192);
  });

  it('stops accepting at the limit less the reserve and starts again at twice the reserve free', async () => {
    const { guard, lines, calls, state } = setup(256);
    state.open = 223;
    await guard.check();
    assert.deepEqual(calls, []);
    state.open = 224;
    await guard.check();
    assert.deepEqual(calls, ['pause', 'pause']);
    assert.equal(guard.accepting, false);
    state.open = 193;
    await guard.check();
    assert.deepEqual(calls, ['pause', 'pause'], 'not below the resume mark yet');
    state.open = 192;
    await guard.check();
    assert.deepEqual(calls, ['pause', 'pause', 'resume', 'resume']);
    assert.equal(guard.accepting, true);
    assert.deepEqual(lines, [
      'warn: App: 224 of 256 file descriptors open: not accepting new connections until no more than 192 are (the kernel refuses them meanwhile)',
      'info: App: 192 of 256 file descriptors open: accepting new connections again',
    ]);
  });

  it('stays paused, and says nothing, while a listener cannot listen again; tries at the next check', async () => {
    const { guard, lines, calls, state, setListenable } = setup(256);
    state.open = 256;
    await guard.check();
    state.open = 100;
    setListenable(false);
    await guard.check();
    assert.equal(guard.accepting, false);
    assert.equal(lines.length, 1);
    setListenable(true);
    await guard.check();
    assert.equal(guard.accepting, true);
    assert.deepEqual(calls, ['pause', 'pause', 'resume', 'resume', 'resume', 'resume']);
    assert.equal(lines.length, 2);
  });

  it('reads the soft limit from /proc/self/limits; unlimited or unreadable is no limit', () => {
    const table = (soft: string): string => `Limit                     Soft Limit           Hard Limit           Units\nMax processes             63704                63704                processes\nMax open files            ${soft}                 524288               files\n`;
    assert.equal(descriptorLimit(() => table('1024')), 1024);
    assert.equal(descriptorLimit(() => table('unlimited')), undefined);
    assert.equal(descriptorLimit(() => {
      throw new Error('ENOENT');
    }), undefined);
    assert.ok((descriptorLimit() ?? 0) > 0, 'this process has a limit');
  });
});
