// The components debian/copyright names beyond the npm packages themselves, and the license texts it
// writes for them: what the uWebSockets.js addon links statically, what npm packages carry compiled into
// their own files (EMBEDDED), the libraries bundled into the Swagger UI files, and the notice files of the
// tree that concern nothing that ships. copyright.mjs turns them into the file.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SWAGGER_UI_FILES } from '../src/runtime/asset-manifest.mjs';

const LICENSES = path.join(path.dirname(new URL(import.meta.url).pathname), 'licenses');

/** Width of the text lines, indent included: longer ones are wrapped between words. */
export const WIDTH = 80;

export const MIT = `Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.`;

const APACHE2 = `On Debian systems the full text of the Apache License 2.0 is in
/usr/share/common-licenses/Apache-2.0.`;

/** GCC's runtime libraries (libstdc++, libgcc), as the uWebSockets.js addons link them statically. */
const GCC_RUNTIME = 'GPL-3+ with GCC-Runtime-Library-3.1 exception';

/**
 * The text a short name's paragraph starts with, before the components' own texts: voice-hub's own
 * license, and the pointers to Debian's copies of the long ones. A short name with neither this nor a
 * component text fails the build.
 */
export const GENERIC = {
  MIT,
  'Apache-2.0': APACHE2,
  [GCC_RUNTIME]: `On Debian systems the full text of the GNU General Public License version 3 is
in /usr/share/common-licenses/GPL-3.`,
  'MPL-2.0': `On Debian systems the full text of the Mozilla Public License 2.0 is in
/usr/share/common-licenses/MPL-2.0.`,
};

export const licenseFileText = (name) => readFileSync(path.join(LICENSES, name), 'utf8');

/** BoringSSL's holders, as Debian's copyright of android-libboringssl 13.0.0+r24 lists them. */
const BORINGSSL_HOLDERS = [
  '1995-1998 Eric Young <eay@cryptsoft.com>',
  '1998-2017 The OpenSSL Project',
  '2014-2021 Google Inc.',
  '2002 Sun Microsystems, Inc.',
  '2005 Nokia',
  '2012 Intel Corporation',
  '2015 CloudFlare Ltd',
  '2016 Brian Smith',
  '2017 Shay Gueron',
  '2015-2016 the fiat-crypto authors',
];
const BORINGSSL_TEXTS = [
  ['OpenSSL', 'boringssl-OpenSSL.txt'],
  ['SSLeay', 'boringssl-SSLeay.txt'],
  ['ISC', 'boringssl-ISC.txt'],
  ['MIT', 'fiat-crypto-MIT.txt'],
];
const LITESPEED = [
  {
    name: 'lsquic',
    what: "LiteSpeed's QUIC and HTTP/3 library",
    markers: ['lsquic_engine_new', 'lsquic_cong_bbr_if'],
    holders: ['2017-2022 LiteSpeed Technologies Inc', '2015-2016 The Chromium Authors'],
    texts: [
      ['MIT', 'lsquic-LICENSE.txt'],
      // Its BBR congestion control (lsquic_bbr.c, lsquic_bw_sampler.c) is ported from Chromium's proto-quic.
      ['BSD-3-Clause', 'lsquic-LICENSE.chrome.txt'],
    ],
  },
  { name: 'ls-qpack', what: "lsquic's QPACK library", markers: ['lsqpack_dec_init'], holders: ['2018-2021 LiteSpeed Technologies Inc'], texts: [['MIT', 'ls-qpack-LICENSE.txt']] },
  { name: 'ls-hpack', what: "lsquic's HPACK library", markers: ['lshpack_dec_init'], holders: ['2018 LiteSpeed Technologies Inc'], texts: [['MIT', 'ls-hpack-LICENSE.txt']] },
  {
    name: 'xxHash',
    what: 'the hash functions ls-qpack and ls-hpack bundle (deps/xxhash)',
    markers: ['XXH32_digest', 'XXH64_digest'],
    holders: ['2012-2014 Yann Collet'],
    texts: [['BSD-2-Clause', 'xxhash-LICENSE.txt']],
  },
  {
    name: 'libstdc++ and libgcc',
    what: "GCC's C++ runtime libraries",
    markers: ['__gxx_personality_v0', '_ZNSt6localeC1Ev'],
    absent: ['libstdc++.so'],
    holders: ['Free Software Foundation, Inc.'],
    texts: [[GCC_RUNTIME, 'gcc-runtime-library-exception-3.1.txt']],
  },
];
/**
 * The components that the uWebSockets.js addon of each Node module ABI links statically, found with
 * `strings` in the addons (every arch of an ABI is one build of the same sources), each with strings
 * that must still be in the addon (and some that must not): a new addon that differs fails the build,
 * to be looked at again.
 */
export const ADDON_COMPONENTS = {
  // @trufflesuite/uws-js-unofficial 20.30.0-unofficial.0: BoringSSL's C sources of about 2022 (the
  // era of Debian's android-libboringssl 13.0.0+r24, whose copyright file these texts come from).
  115: [
    {
      name: 'BoringSSL',
      what: "Google's fork of OpenSSL (C sources of about 2022)",
      markers: ['boringssl/crypto/x509/x509_vfy.c', 'boringssl/crypto/x509v3/v3_pci.c'],
      absent: ['boringssl/crypto/x509/x509_vfy.cc'],
      holders: [...BORINGSSL_HOLDERS, '2004 Kungliga Tekniska Högskolan'],
      // crypto/x509v3/v3_pci.c is in this revision, under KTH's 3-clause BSD license.
      texts: [...BORINGSSL_TEXTS, ['BSD-3-Clause', 'boringssl-KTH-BSD-3-Clause.txt']],
    },
    ...LITESPEED,
  ],
  // @btc-vision/uwebsockets.js 20.56.0 (upstream ff48755): BoringSSL's C++ sources of about early 2025
  // (X25519MLKEM768 beside the Kyber draft; uSockets updated its BoringSSL early in 2025).
  137: [
    {
      name: 'BoringSSL',
      what: "Google's fork of OpenSSL (C++ sources of about early 2025)",
      markers: ['boringssl/crypto/x509/x509_vfy.cc', 'boringssl/crypto/fipsmodule/bn/bn.cc.inc'],
      holders: [...BORINGSSL_HOLDERS, 'The BoringSSL Authors'],
      texts: BORINGSSL_TEXTS,
      note: `BoringSSL has since relicensed its code under Apache-2.0, and the addon does not show
whether its revision predates that change. Its license texts here are those of BoringSSL's LICENSE
before the change, with the notices of its holders; if the revision is already a relicensed one, its
code is under Apache-2.0 (in this file) instead.`,
    },
    ...LITESPEED,
  ],
};

/**
 * libopus' holders: those of Debian's copyright of libopus 1.3.1 (`Files: *`), and the further ones it
 * names for files that opus-decoder's build compiles (src/opus*.c, celt/*.c, silk/*.c and their headers:
 * celt/cpu_support.h, silk/LPC_fit.c, silk/NSQ.h).
 */
const LIBOPUS_HOLDERS = [
  '2001-2018 Xiph.Org',
  '2001-2018 Skype Limited',
  '2001-2018 Octasic',
  '2001-2018 Jean-Marc Valin',
  '2001-2018 Timothy B. Terriberry',
  '2001-2018 CSIRO',
  '2001-2018 Gregory Maxwell',
  '2001-2018 Mark Borgerding',
  '2001-2018 Erik de Castro Lopo',
  '1994-2015 Xiph.Org Foundation',
  '2013 Parrot',
  '2013 Koen Vos',
  '2014 Vidyo',
];

/** Emscripten's runtime as it ends up in a package's WebAssembly and its JavaScript glue. */
const emscriptenRuntime = (what) => ({
  name: "Emscripten's runtime",
  what,
  holders: ['2010-2014 Emscripten authors', '2005-2020 Rich Felker, et al.'],
  // Emscripten offers MIT or NCSA; its LICENSE (both texts) is kept whole, under MIT. musl: MIT.
  texts: [
    ['MIT', 'emscripten-LICENSE.txt'],
    ['MIT', 'musl-COPYRIGHT.txt'],
  ],
});

/** The first comment of a C file, without its markers: the notice puff.h carries. */
function firstComment(text) {
  const m = /\/\*([\s\S]*?)\*\//.exec(text);
  if (!m) throw new Error('no comment');
  const lines = m[1].split('\n').map((l) => l.trimEnd());
  while (lines.length && !lines[0].trim()) lines.shift();
  const margin = Math.min(...lines.filter((l) => l.trim()).map((l) => /^ */.exec(l)[0].length));
  return lines.map((l) => l.slice(margin)).join('\n').trim();
}

/**
 * What npm packages of the production tree carry compiled into their own files, beyond their own code
 * (which their license files cover), by package name: `holds` names where (in the Comment), `markers`
 * are [file in the package, string] pairs that must still be there (a new release that no longer has
 * them fails the build, to be looked at again), and `components` what it holds, as ADDON_COMPONENTS
 * lists them, where a text is a file of packaging/licenses/ or a function of the package's folder.
 */
export const EMBEDDED = {
  'opus-decoder': {
    holds: 'its WebAssembly (in src/EmscriptenWasm.js), which Emscripten built from:',
    markers: [
      ['README.md', 'Based on [`libopus`](https://github.com/xiph/opus)'],
      ['src/EmscriptenWasm.js', '// include: shell_minimal.js'],
      ['src/EmscriptenWasm.js', 'opus_frame_decoder_create'],
      ['src/OpusDecoder.js', 'OPUS_INVALID_PACKET'],
    ],
    components: [
      {
        name: 'libopus',
        what: "Xiph.Org's Opus codec, its decoder (the package names no revision)",
        holders: LIBOPUS_HOLDERS,
        texts: [
          ['BSD-3-Clause', 'libopus-COPYING.txt'],
          ['BSD-2-Clause', 'libopus-BSD-2-Clause.txt'],
        ],
      },
      emscriptenRuntime('its JavaScript glue, its emmalloc allocator and the C library functions it compiles in (its own and musl\'s)'),
    ],
  },
  '@wasm-audio-decoders/common': {
    holds: 'a WebAssembly inflater (in src/WASMAudioDecoderCommon.js), which unpacks the decoders\' WebAssembly, built from:',
    markers: [
      ['src/WASMAudioDecoderCommon.js', 'const puffString = String.raw`'],
      ['src/puff/README', 'This copy of puff has been altered from the original'],
      ['src/puff/puff.h', 'Copyright (C) 2002-2013 Mark Adler'],
    ],
    components: [
      {
        name: 'puff',
        what: "Mark Adler's inflate from zlib's contrib/puff, in a copy the package altered (its src/puff/README says so)",
        holders: ['2002-2013 Mark Adler'],
        texts: [['Zlib', (dir) => firstComment(readFileSync(path.join(dir, 'src/puff/puff.h'), 'utf8'))]],
      },
    ],
  },
  'sql.js': {
    holds: 'its WebAssembly (dist/sql-wasm.wasm, appended to the executable) and the glue dist/sql-wasm.js, which Emscripten built from:',
    markers: [
      ['dist/sql-wasm.wasm', 'sqlite_source_id'],
      ['dist/sql-wasm.wasm', 'ENABLE_FTS3'],
      // extension-functions.c's SQL functions.
      ['dist/sql-wasm.wasm', 'lower_quartile'],
      ['dist/sql-wasm.wasm', 'charindex'],
      // musl's strerror messages.
      ['dist/sql-wasm.wasm', 'Illegal byte sequence'],
      ['dist/sql-wasm.wasm', 'No error information'],
    ],
    components: [
      {
        name: 'SQLite',
        what: (dir) => {
          const wasm = readFileSync(path.join(dir, 'dist/sql-wasm.wasm'), 'latin1');
          const versions = [...wasm.matchAll(/[\x00-\x1f](3\.\d{1,3}\.\d{1,3})\x00/g)].map((m) => m[1]);
          const ids = [...wasm.matchAll(/\x00(20\d\d-\d\d-\d\d \d\d:\d\d:\d\d) [0-9a-f]{64}\x00/g)].map((m) => m[1]);
          if (versions.length !== 1 || ids.length !== 1) throw new Error(`sql.js: no single SQLite version (${versions.join(', ')}) and source id in dist/sql-wasm.wasm`);
          return `the database engine, version ${versions[0]} (source id of ${ids[0]})`;
        },
        // As Debian's copyright of sqlite3 writes it.
        holders: ['D. Richard Hipp <drh@hwaci.com>'],
        texts: [['public-domain', 'sqlite-public-domain.txt']],
      },
      {
        name: 'extension-functions.c',
        what: "SQL math and string functions by Liam Healy (after code of relicoder and Mikey C), from sqlite.org's contributed files",
        holders: [],
        texts: [],
        note: `extension-functions.c states no copyright and no license: it is one of the contributed
files sqlite.org distributes (https://www.sqlite.org/contrib), and sql.js builds it in as it is.`,
      },
      emscriptenRuntime('the JavaScript glue and the C library functions it compiles in (its own and musl\'s)'),
    ],
  },
};

/**
 * The libraries the Swagger UI files that ship bundle, as their `.LICENSE.txt` files list them: each
 * comment there must match one of these (`match`), and the copyright statements in it must be among
 * its `holders`; a new one fails the build, to be added here. `license` is a short name, or the names
 * of a choice. `what` says more where the notice alone says little.
 */
export const SWAGGER_LIBRARIES = [
  { name: 'classnames', match: /jedwatson\.github\.io\/classnames/, license: 'MIT', holders: ['2018 Jed Watson'] },
  { name: 'deep-extend', match: /@description Recursive object extending/, license: 'MIT', holders: ['2013-2018 Viacheslav Lotsmanov'] },
  { name: 'buffer', match: /^The buffer module from node\.js, for the browser\./, license: 'MIT', holders: ['Feross Aboukhadijeh'] },
  { name: 'fast-json-patch', match: /^https:\/\/github\.com\/Starcounter-Jack\/JSON-Patch\n/, license: 'MIT', holders: ['2017-2021 Joachim Wester', '2017-2022 Joachim Wester'] },
  { name: 'repeat-string', match: /^repeat-string </, license: 'MIT', holders: ['2014-2015, Jon Schlinkert'] },
  { name: 'DOMPurify', match: /^@license DOMPurify \d/, license: ['Apache-2.0', 'MPL-2.0'], holders: ['Cure53 and other contributors'] },
  {
    name: 'ieee754',
    match: /^ieee754\. BSD-3-Clause License\./,
    license: 'BSD-3-Clause',
    holders: ['Feross Aboukhadijeh'],
    what: "its text is npm package ieee754's, under BSD-3-Clause here",
  },
  { name: 'regenerator-runtime', match: /^regenerator-runtime -- Copyright/, license: 'MIT', holders: ['2014-present, Facebook, Inc'] },
  { name: 'safe-buffer', match: /^safe-buffer\. MIT License\./, license: 'MIT', holders: ['Feross Aboukhadijeh'] },
  { name: 'Immutable', match: /^@license\nMIT License\n\nCopyright \(c\) 2014-present, Lee Byron/, license: 'MIT', holders: ['2014-present, Lee Byron and other contributors'] },
  {
    name: 'React (react, react-dom, scheduler)',
    match: /^@license React\n(?:react|react-dom|scheduler)\.production\.min\.js\n/,
    license: 'MIT',
    holders: ['Facebook, Inc. and its affiliates'],
  },
  { name: 'use-sync-external-store', match: /^@license React\nuse-sync-external-store-with-selector\.production\.js\n/, license: 'MIT', holders: ['Meta Platforms, Inc. and affiliates'] },
];

/** The license comments of a `.LICENSE.txt` file of a minified bundle, without their markers. */
export function licenseComments(text) {
  return [...text.replace(/\r\n?/g, '\n').matchAll(/\/\*[!*]?([\s\S]*?)\*\//g)].map((m) =>
    m[1]
      .split('\n')
      .map((l) => l.replace(/^\s*\*(?: |$)/, '').trim())
      .join('\n')
      .trim(),
  );
}

/**
 * Files of npm packages that name what other code carries and that are no license file of the package
 * (third-party notices, license files in subfolders, notices of bundles): each one in the production
 * tree must be handled by this file or listed here with why it concerns nothing that ships, or the
 * build fails. The `.LICENSE.txt` files of Swagger UI's bundles are handled: those of the bundles that
 * ship (SWAGGER_UI_FILES) by swaggerNotices(), the others concern files that do not ship. Apache 2.0's
 * NOTICE files (its section 4(d)) at the top of a package are license files of it: licenseFiles()
 * includes them.
 */
export const NOTICE_FILES = {
  '@microsoft/signalr/src/third-party-notices.txt': "of the package's browser bundles (dist/browser); esbuild bundles dist/cjs, which carries none of those libraries",
  '@microsoft/signalr-protocol-msgpack/src/third-party-notices.txt': "of the package's browser bundles (dist/browser); esbuild bundles dist/cjs, which carries none of those libraries (@msgpack/msgpack is an npm package of this tree)",
  'tslib/CopyrightNotice.txt': "the banner of tslib's own files: the notice of its LICENSE.txt",
};
/** Names of files that are notices or license texts of some sort. */
export const NOTICE_NAME = /notice|third.?party|^(?:un)?(?:licen[cs]es?|copying)\b|\.LICENSE(?:\.txt)?$/i;
