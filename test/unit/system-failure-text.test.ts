// How a failure of the machine is worded (src/cli/fatal.ts): one line naming what failed (the file, the
// host name, the address) and what to do. `cannot getaddrinfo: unknown node or service (ENOTFOUND)` named
// no host, and ELOOP or ENAMETOOLONG said nothing to do: the advice came from a table of six codes, and
// any other code got none. Every code the system has is worded here, for each kind of thing it may name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getSystemErrorMap } from 'node:util';
import { systemFailureText } from '../../src/cli/fatal.js';

/** An error as Node makes one for a failed system call. */
function systemError(errno: number, code: string, syscall: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(`${code}: ${syscall}`), { errno, code, syscall, ...fields });
}

const CODES = [...getSystemErrorMap()].map(([errno, [code]]) => [errno, code] as const);

describe('a system failure names what failed and says what to do, whatever its code', () => {
  const kinds: [string, string, Record<string, unknown>, string][] = [
    ['a file', 'open', { path: '/var/lib/voice-hub/voice-hub.db' }, 'cannot open /var/lib/voice-hub/voice-hub.db: '],
    ['a host name', 'getaddrinfo', { hostname: 'pi.invalid' }, 'cannot resolve pi.invalid: '],
    ['an address and port', 'listen', { address: '127.0.0.1', port: 5050 }, 'cannot listen 127.0.0.1:5050: '],
  ];
  for (const [kind, syscall, fields, start] of kinds) {
    it(`${kind}: every one of the ${CODES.length} codes`, () => {
      for (const [errno, code] of CODES) {
        const text = systemFailureText(systemError(errno, code, syscall, fields))!;
        assert.ok(text.startsWith(start), `${code}: ${text}`);
        assert.match(text, new RegExp(`\\(${code}\\); \\S`), `${code} says what to do: ${text}`);
      }
    });
  }

  it('the probe\'s three: the host named, and what to do about a link loop and a name too long', () => {
    const code = (name: string): number => CODES.find(([, c]) => c === name)![0];
    // Node's resolver gives ENOTFOUND the errno of EAI_NONAME.
    assert.equal(systemFailureText(systemError(code('EAI_NONAME'), 'ENOTFOUND', 'getaddrinfo', { hostname: 'nonexistent.invalid' })),
      "cannot resolve nonexistent.invalid: unknown node or service (ENOTFOUND); check the name's spelling, or give an IP address");
    assert.equal(systemFailureText(systemError(code('ELOOP'), 'ELOOP', 'open', { path: '/tmp/loop' })),
      'cannot open /tmp/loop: too many symbolic links encountered (ELOOP); a symbolic link on that path leads back to itself or through too many others: fix the link, or give the path it should lead to');
    assert.equal(systemFailureText(systemError(code('ENAMETOOLONG'), 'ENAMETOOLONG', 'open', { path: '/tmp/x' })),
      'cannot open /tmp/x: name too long (ENAMETOOLONG); a name on that path is longer than 255 bytes, or the whole path longer than 4095: choose a shorter path');
  });
});
