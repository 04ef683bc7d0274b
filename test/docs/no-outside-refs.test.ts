// Nothing in the repository may point at documents outside it: someone who clones it has only what is
// tracked here. Comments and docs say the rule itself (naming a public protocol such as SignalR's hub
// protocol is fine) or point at a file in docs/. Every tracked text file is searched but this one, which
// must spell out what it forbids.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT, trackedFiles } from '../support/docs.js';

const SELF = 'test/docs/no-outside-refs.test.ts';

const OUTSIDE_REFERENCES: ReadonlyArray<[string, RegExp]> = [
  ['a specification file', /\b(?:SPEC|DESIGN|STYLE)\.md\b/i],
  ["SignalR's specification files by name", /\b(?:HubProtocol|TransportProtocols)\.md\b/i],
  ['the shared folder', /(?:\.\.\/|\/work\/)shared\b/],
  ['"the spec"', /\bthe spec\b/i],
  ['the specification by its short name', /\bSPEC\b|\bDESIGN\b/],
];

/** The lines of one text that mention something outside the repository, as `file:line: text (what)`. */
function outsideReferences(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const [what, re] of OUTSIDE_REFERENCES) {
      if (re.test(line)) found.push(`${file}:${i + 1}: ${line.trim()} (${what})`);
    }
  });
  return found;
}

describe('no reference to files outside the repository', () => {
  it('catches each kind of reference, and not ordinary words', () => {
    const bad = [
      '// see SPEC.md "Configuration keys"',
      '// (DESIGN.md "Storage")',
      '// STYLE.md "One schema"',
      '// HubProtocol.md "Type Mappings"',
      '// TransportProtocols.md',
      "It implements the interface of `../shared/SPEC.md`",
      'read /work/shared/notes',
      '// which the spec says to ignore',
      '// The ones the SPEC names',
      '// the DESIGN decision',
    ];
    for (const line of bad) assert.equal(outsideReferences('x.ts', line).length > 0, true, line);
    const fine = [
      "// SignalR's hub protocol, MessagePack encoding",
      '// the specification of RFC 9112 section 9.3.2',
      '// a spec-compliant client; inspect the design',
      "// sharedArrayBuffer and the shared/ folder's neighbours", // no '../' or '/work/' before it
      '// docs/protocol.md, "MQTT"',
    ];
    for (const line of fine) assert.deepEqual(outsideReferences('x.ts', line), [], line);
  });

  it('holds for every tracked text file', () => {
    const files = trackedFiles();
    assert.ok(files.includes('README.md') && files.some((f) => f.startsWith('src/')), 'git ls-files lists the sources');
    const found: string[] = [];
    for (const file of files.filter((f) => f !== SELF)) {
      let buf: Buffer;
      try {
        buf = readFileSync(path.join(REPO_ROOT, file));
      } catch (e) {
        // A tracked file deleted in the working tree (not yet committed) has nothing to search.
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      if (buf.includes(0)) continue; // binary
      found.push(...outsideReferences(file, buf.toString('utf8')));
    }
    assert.deepEqual(found, []);
  });
});
