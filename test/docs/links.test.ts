// Every relative link in README.md and docs/*.md leads to a file of the repository, and a link to a
// heading (`file.md#anchor`, `#anchor`) to a heading that exists, so moving text between documents
// cannot leave a reader at a dead end.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { headingAnchors, markdownLinks, readmeInstallCommands, REPO_ROOT } from '../support/docs.js';

const DOCUMENTS = ['README.md', ...readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Problems with one relative link of `from` (a path relative to the root), or none. */
function brokenLink(from: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto: ...: not a file of ours
  const [file = '', anchor] = target.split('#', 2);
  const resolved = file === '' ? path.join(REPO_ROOT, from) : path.resolve(REPO_ROOT, path.dirname(from), decodeURIComponent(file));
  if (!resolved.startsWith(REPO_ROOT + path.sep)) return `${target}: leaves the repository`;
  if (!existsSync(resolved)) return `${target}: no such file`;
  if (anchor !== undefined && resolved.endsWith('.md') && statSync(resolved).isFile()) {
    if (!headingAnchors(readFileSync(resolved, 'utf8')).has(anchor)) return `${target}: no heading with anchor #${anchor}`;
  }
  return null;
}

describe('documentation links', () => {
  it('finds links and anchors the way GitHub renders them', () => {
    const text = [
      '# Title',
      'See [the protocol](docs/protocol.md#mqtt) and ![logo](img/logo.png "Logo"),',
      'and [`bench/RESULTS.md`](../bench/RESULTS.md); not `[code](x.md)`.',
      '```sh',
      '[in a block](nowhere.md)',
      '# not a heading',
      '```',
      '## The upstream over `wss://`',
      '## Title',
    ].join('\n');
    assert.deepEqual(markdownLinks(text).map((l) => l.target), ['docs/protocol.md#mqtt', 'img/logo.png', '../bench/RESULTS.md']);
    assert.deepEqual([...headingAnchors(text)], ['title', 'the-upstream-over-wss', 'title-1']);
    assert.equal(brokenLink('README.md', 'docs/nowhere.md'), 'docs/nowhere.md: no such file');
    assert.equal(brokenLink('docs/ops.md', '../../outside.md'), '../../outside.md: leaves the repository');
    assert.equal(brokenLink('README.md', '#no-such-heading'), '#no-such-heading: no heading with anchor #no-such-heading');
    assert.equal(brokenLink('README.md', 'https://example.com/x.md'), null);
  });

  it('README.md and docs/ are the documents', () => {
    for (const doc of ['README.md', 'docs/operations.md', 'docs/https.md', 'docs/security.md', 'docs/protocol.md', 'docs/packaging.md', 'docs/decisions.md', 'docs/benchmarks.md']) {
      assert.ok(DOCUMENTS.includes(doc), doc);
    }
  });

  for (const doc of DOCUMENTS) {
    it(`every relative link in ${doc} resolves`, () => {
      const links = markdownLinks(readFileSync(path.join(REPO_ROOT, doc), 'utf8'));
      const broken = links.flatMap((l) => {
        const problem = brokenLink(doc, l.target);
        return problem === null ? [] : [`${doc}:${l.line}: ${problem}`];
      });
      assert.deepEqual(broken, []);
    });
  }

  // A file named in code (`src/http/pipeline.ts`) is a pointer as much as a link: one renamed or never
  // written (`test/hardening/host-header`, without its `.test.ts`) sent a reader nowhere.
  for (const doc of DOCUMENTS) {
    it(`every repository path ${doc} names in code exists`, () => {
      const text = readFileSync(path.join(REPO_ROOT, doc), 'utf8');
      const missing = [...text.matchAll(/`((?:src|test|scripts|packaging|systemd|config|docs|bench|\.ci)\/[A-Za-z0-9_./-]+)`/g)]
        .map((m) => m[1]!)
        .filter((p) => !existsSync(path.join(REPO_ROOT, p)));
      assert.deepEqual([...new Set(missing)], []);
    });
  }

  it('the README keeps the three install commands a Pi owner types (the booted-root test runs them)', () => {
    assert.deepEqual(readmeInstallCommands(), [
      'sudo apt install ./voice-hub_0.2.0_arm64.deb',
      'systemctl status voice-hub',
      'curl http://localhost:5000/health',
    ]);
  });

  it('the README stays short: at most 250 lines', () => {
    const lines = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines`);
  });
});
