// /usr/share/doc/voice-hub/copyright (packaging/copyright.mjs), made for the Node 24 and the legacy x64
// packages from the real tree, the way packaging/build-deb.mjs makes it (the runtime tarball from
// .cache/node-runtimes, fetched with npm pack the first time), and read back as copyright-format 1.0:
// one paragraph per path pattern, one stand-alone License paragraph per short name the License fields
// use, every bundled component named with its license text, and lines that lintian and any deb822
// reader take.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { nodeRuntime, TARGETS } from '../../scripts/sea-runtime.mjs';
import { uwsAddonFileName } from '../../src/runtime/asset-manifest.mjs';
import { ROOT } from '../support/service.js';

type CopyrightFile = (root: string, runtimePkg: string, runtimeTgz: string) => string;
const { copyrightFile } = (await import(pathToFileURL(path.join(ROOT, 'packaging/copyright.mjs')).href)) as { copyrightFile: CopyrightFile };

/** Lintian's limit of a line (very-long-line-length-in-source-file); ours are wrapped well under it. */
const LINTIAN_MAX_LINE = 512;
const WIDTH = 80;

interface Field {
  readonly name: string;
  /** The text on the field's own line. */
  readonly first: string;
  /** The continuation lines, without their leading space, " ." as an empty line. */
  readonly rest: string[];
}
type Paragraph = Map<string, Field>;

/** Paragraphs of a deb822 file, with the well-formedness of every line checked on the way. */
function parse(text: string): Paragraph[] {
  assert.ok(text.endsWith('\n') && !text.endsWith('\n\n'), 'one newline at the end');
  const paragraphs: Paragraph[] = [];
  let current: Paragraph | undefined;
  let field: Field | undefined;
  for (const [i, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    assert.ok(!/[\t\r]/.test(line), `${where}: no tab or CR`);
    assert.equal(line, line.trimEnd(), `${where}: no trailing white space`);
    assert.ok(line.length <= LINTIAN_MAX_LINE, `${where}: ${line.length} characters`);
    if (line === '') {
      assert.ok(current, `${where}: a paragraph ends once`);
      current = undefined;
      field = undefined;
      continue;
    }
    if (line.startsWith(' ')) {
      assert.ok(field, `${where}: a continuation line belongs to a field`);
      // Wrapped, but for a copyright statement, one a line: a longer line is one word (a URL) after its indent.
      if (field.name !== 'Copyright') assert.ok(line.length <= WIDTH || !/\S\s+\S/.test(line.trim()), `${where}: longer than ${WIDTH} and could be wrapped`);
      // " ." alone is an empty line; " ." followed by more is reserved in formatted text.
      assert.ok(line === ' .' || !line.startsWith(' .'), `${where}: reserved " ." form`);
      assert.ok(line.trim() !== '', `${where}: white space only`);
      field.rest.push(line === ' .' ? '' : line.slice(1));
      continue;
    }
    const m = /^([A-Za-z][A-Za-z0-9-]*):(?: (.*))?$/.exec(line);
    assert.ok(m, `${where}: a field line "Name: value"`);
    if (!current) paragraphs.push((current = new Map()));
    assert.ok(!current.has(m[1]!), `${where}: field ${m[1]} once per paragraph`);
    field = { name: m[1]!, first: m[2] ?? '', rest: [] };
    current.set(field.name, field);
  }
  assert.equal(current === undefined, false, 'the last paragraph ends the file');
  return paragraphs;
}

/** A field's text, lines joined, white space runs as one space: to look for texts regardless of wrapping. */
const flat = (f: Field | undefined): string => (f ? [f.first, ...f.rest].join(' ').replace(/\s+/g, ' ').trim() : '');
const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The short names of a License expression: "A and B or C with X exception". */
const shortNames = (expression: string): string[] => expression.split(/\s+(?:and|or)\s+/).map((s) => s.trim().toLowerCase());

function copyrightOf(key: string): string {
  const target = TARGETS[key]!;
  const dir = path.dirname(nodeRuntime(target, path.join(ROOT, '.cache', 'node-runtimes')));
  const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  assert.ok(tgz, `the runtime tarball of ${target.pkg} in ${dir}`);
  return copyrightFile(ROOT, target.pkg, path.join(dir, tgz));
}

const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; dev?: boolean; optional?: boolean }> };
const production = Object.entries(lock.packages)
  .filter(([key, meta]) => key && !meta.dev && !meta.optional && !key.includes('node_modules/@types/'))
  .map(([key, meta]) => [key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length), meta.version!] as const);
const licenseText = (file: string): string => readFileSync(path.join(ROOT, 'packaging/licenses', file), 'utf8');

for (const [key, era] of [['x64', 'Node 24'], ['x64-legacy', 'Node 20']] as const) {
  describe(`copyright of the ${key} package (${era})`, () => {
    let text = '';
    let header: Paragraph;
    let rest: Paragraph[] = [];
    let files: Paragraph[] = [];
    let standalone: Paragraph[] = [];
    let exe: Paragraph;
    before(() => {
      text = copyrightOf(key);
      [header, ...rest] = parse(text) as [Paragraph, ...Paragraph[]];
      files = rest.filter((p) => p.has('Files'));
      standalone = rest.filter((p) => !p.has('Files'));
      exe = files.find((p) => p.get('Files')!.first === 'usr/bin/voice-hub')!;
    });
    /** The text of the stand-alone paragraph of short name `name`, flattened. */
    const licenseOf = (name: string): string => {
      const field = standalone.find((p) => p.get('License')!.first.toLowerCase() === name.toLowerCase())?.get('License');
      assert.ok(field, `License: ${name}`);
      return squash(field.rest.join(' '));
    };
    const addon = uwsAddonFileName(TARGETS[key]!.uwsArch, 'linux', TARGETS[key]!.abi);

    it('is copyright-format 1.0: a header, Files paragraphs, then stand-alone License paragraphs', () => {
      assert.equal(header.get('Format')?.first, 'https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/');
      assert.ok(!header.has('Files') && !header.has('License'), 'the header is no Files or License paragraph');
      for (const p of rest) assert.ok(p.has('Files') || p.has('License'), `every paragraph is a Files or a License one: ${[...p.keys()].join(', ')}`);
      const kinds = rest.map((p) => (p.has('Files') ? 'F' : 'L')).join('');
      assert.match(kinds, /^F+L+$/, 'Files paragraphs first');
      for (const p of files) {
        assert.ok(p.get('Copyright')?.first && p.get('License')?.first, `Files: ${p.get('Files')!.first} has Copyright and License`);
        assert.equal(p.get('License')!.rest.length, 0, 'a Files paragraph names its licenses; their texts are in stand-alone paragraphs');
      }
      for (const p of standalone) {
        assert.ok(!p.has('Copyright'), 'a stand-alone License paragraph has no Copyright');
        assert.ok(p.get('License')!.rest.some((l) => l.trim()), `License: ${p.get('License')!.first} has its text`);
      }
    });

    it('has each Files pattern in exactly one paragraph, usr/bin/voice-hub last', () => {
      const patterns = files.flatMap((p) => p.get('Files')!.first.split(/\s+/).concat(p.get('Files')!.rest.flatMap((l) => l.split(/\s+/))).filter(Boolean));
      assert.deepEqual(patterns, ['*', 'usr/bin/voice-hub']);
      assert.equal(new Set(patterns).size, patterns.length);
    });

    it('has exactly one stand-alone paragraph for each short name of a License expression, and none unused', () => {
      const used = new Set(files.flatMap((p) => shortNames(p.get('License')!.first)));
      const defined = standalone.map((p) => p.get('License')!.first.toLowerCase());
      assert.equal(new Set(defined).size, defined.length, `no short name twice: ${defined.join(', ')}`);
      assert.deepEqual([...used].sort(), [...defined].sort());
      for (const name of used) assert.ok(!/\s/.test(name) || /^\S+ with \S+ exception$/.test(name), `short name ${name}`);
      // usr/bin/voice-hub: each license once, in an `and` expression.
      const names = exe.get('License')!.first.split(' and ');
      assert.equal(new Set(names).size, names.length);
      for (const name of ['MIT', 'Node.js', 'Apache-2.0', 'ISC', 'BSD-2-Clause', 'BSD-3-Clause', 'OpenSSL', 'SSLeay']) assert.ok(names.includes(name), name);
    });

    it('names every npm package of the production tree with its version, and its holders', () => {
      const comment = flat(exe.get('Comment'));
      const holders = exe.get('Copyright')!;
      const copyright = [holders.first, ...holders.rest];
      for (const [name, version] of production) assert.ok(comment.includes(`npm package ${name} ${version}`), `${name} ${version}`);
      // Holders from each package's license file, "the authors of" one without a copyright line.
      for (const holder of ['2015-2021 Evgeny Poberezkin', '2011 Einar Otto Stangvik <einaros@gmail.com>', '2020-2021 SmartBear Software Inc.', 'the authors of @microsoft/signalr', 'Node.js contributors', 'voice-hub developers']) {
        assert.ok(copyright.includes(holder), holder);
      }
      assert.equal(new Set(copyright).size, copyright.length, 'each holder once');
      // Each package's own license text is kept: ajv's, with its notice, under MIT.
      const ajv = lock.packages['node_modules/ajv']!.version!;
      assert.ok(licenseOf('MIT').includes(`-- npm package ajv ${ajv} -- ${squash(readFileSync(path.join(ROOT, 'node_modules/ajv/LICENSE'), 'utf8'))}`), "ajv's own MIT text");
      // Full Apache 2.0 texts point to Debian's copy instead.
      assert.ok(!text.includes('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION'), 'no full Apache 2.0 text');
      assert.ok(licenseOf('Apache-2.0').startsWith('On Debian systems the full text of the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0.'), 'Apache-2.0 points to common-licenses');
    });

    it(`names what ${addon} links statically, with holders and license texts`, () => {
      const comment = flat(exe.get('Comment'));
      const holders = [exe.get('Copyright')!.first, ...exe.get('Copyright')!.rest];
      assert.ok(comment.includes(`the uWebSockets.js addon ${addon}`), addon);
      for (const name of ['BoringSSL', 'lsquic', 'ls-qpack', 'ls-hpack', 'xxHash', 'libstdc++']) assert.ok(comment.includes(`- ${name}`), name);
      for (const holder of ['1995-1998 Eric Young <eay@cryptsoft.com>', '1998-2017 The OpenSSL Project', '2017-2022 LiteSpeed Technologies Inc', '2012-2014 Yann Collet']) {
        assert.ok(holders.includes(holder), holder);
      }
      // Each text in full, under the component's name, in the paragraph of its license.
      for (const [name, file, component] of [
        ['OpenSSL', 'boringssl-OpenSSL.txt', 'BoringSSL'],
        ['SSLeay', 'boringssl-SSLeay.txt', 'BoringSSL'],
        ['ISC', 'boringssl-ISC.txt', 'BoringSSL'],
        ['MIT', 'fiat-crypto-MIT.txt', 'BoringSSL'],
        ['MIT', 'lsquic-LICENSE.txt', 'lsquic'],
        ['BSD-3-Clause', 'lsquic-LICENSE.chrome.txt', 'lsquic'],
        ['MIT', 'ls-qpack-LICENSE.txt', 'ls-qpack'],
        ['MIT', 'ls-hpack-LICENSE.txt', 'ls-hpack'],
        ['BSD-2-Clause', 'xxhash-LICENSE.txt', 'xxHash'],
        ['GPL-3+ with GCC-Runtime-Library-3.1 exception', 'gcc-runtime-library-exception-3.1.txt', 'libstdc++ and libgcc'],
      ] as const) {
        const paragraph = licenseOf(name);
        assert.ok(paragraph.includes(`-- ${component}, in ${addon}`), `${component} under ${name}`);
        assert.ok(paragraph.includes(squash(licenseText(file))), `${file} under ${name}`);
      }
      // BoringSSL of 2022 (Node 20 addon) still has KTH's crypto/x509v3/v3_pci.c; the 2025 one does not.
      const kth = licenseOf('BSD-3-Clause').includes(squash(licenseText('boringssl-KTH-BSD-3-Clause.txt')));
      assert.equal(kth, era === 'Node 20');
      assert.equal(holders.includes('2004 Kungliga Tekniska Högskolan'), era === 'Node 20');
    });

    it("keeps the Node.js runtime's license text, as Node ships it", () => {
      assert.ok(licenseOf('Node.js').startsWith('Node.js is licensed for use as follows:'), "Node's LICENSE");
      for (const lib of ['- V8, located at deps/v8', '- libuv, located at deps/uv', '- OpenSSL, located at deps/openssl']) assert.ok(licenseOf('Node.js').includes(lib), lib);
    });
  });
}
