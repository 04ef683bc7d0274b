// debian/copyright for the packages (machine-readable format 1.0). The package holds one file of its
// own making besides configuration and docs, /usr/bin/voice-hub, and that one file holds every
// component: voice-hub itself (with our C addons), the Node.js runtime (its LICENSE lists every library
// Node bundles), the npm packages of the production dependency tree that esbuild bundles, and the
// target's uWebSockets.js addon, which links BoringSSL, lsquic (with ls-qpack, ls-hpack, xxHash) and
// GCC's C++ runtime statically.
//
// In format 1.0, of the Files paragraphs that match a file the last one applies, so each path pattern
// has exactly one paragraph: `*` (voice-hub's own files) and usr/bin/voice-hub. The latter lists the
// holders of every component in Copyright and every license in License, as an `and` expression; each
// short name in it has exactly one stand-alone License paragraph, which holds the texts of all
// components under that license, each text as its component ships it (they carry the copyright notices
// those licenses require to be reproduced), identical texts once. Texts of components that are not npm
// packages are kept in packaging/licenses/ (see its README.md): the build reads nothing from the network.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TARGETS } from '../scripts/sea-runtime.mjs';
import { UWS_ADDONS, uwsAddonFileName } from '../src/runtime/asset-manifest.mjs';

const LICENSES = path.join(path.dirname(new URL(import.meta.url).pathname), 'licenses');

/** Width of the text lines, indent included: longer ones are wrapped between words. */
const WIDTH = 80;

const MIT = `Permission is hereby granted, free of charge, to any person obtaining a copy
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
const GENERIC = {
  MIT,
  'Apache-2.0': APACHE2,
  [GCC_RUNTIME]: `On Debian systems the full text of the GNU General Public License version 3 is
in /usr/share/common-licenses/GPL-3.`,
};

const licenseFileText = (name) => readFileSync(path.join(LICENSES, name), 'utf8');

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
const ADDON_COMPONENTS = {
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

/** A text as copyright-format continuation lines: indented, wrapped at WIDTH, blank lines as " .". */
function indent(text) {
  const out = [];
  for (const raw of text.replace(/\r\n?/g, '\n').replace(/\t/g, '        ').trimEnd().split('\n')) {
    const line = raw.trimEnd();
    if (line.trim() === '') {
      out.push(' .');
      continue;
    }
    const first = /^ */.exec(line)[0];
    let rest = line.slice(first.length);
    // The wrapped rest of a list item ("- ") or of a "-- label --" line goes under its text.
    const next = first + ' '.repeat(/^--? /.exec(rest)?.[0].length ?? 0);
    for (let lead = first; rest; lead = next) {
      let piece = rest;
      if (1 + lead.length + rest.length > WIDTH) {
        const cut = rest.lastIndexOf(' ', WIDTH - 1 - lead.length);
        // A word longer than the line (a URL) stays whole.
        const end = cut > 0 ? cut : rest.indexOf(' ') > 0 ? rest.indexOf(' ') : rest.length;
        piece = rest.slice(0, end);
      }
      rest = rest.slice(piece.length).trimStart();
      // " ." followed by more is reserved in formatted text: such a line gets one more space.
      out.push(` ${lead}${piece.startsWith('.') ? ' ' : ''}${piece.trimEnd()}`);
    }
  }
  return out.join('\n');
}

/**
 * Full Apache 2.0 texts (Node's LICENSE holds two: OpenSSL's and LIEF's) replaced by Debian's copy, as
 * Debian asks; the surrounding notices and appendices stay.
 */
function shortenApache2(text) {
  // Line ends first: a license written with CRLF (the Node 24 uWS package's) must match as well.
  return text.replace(/\r\n?/g, '\n').replace(
    /^([ \t]*)Apache License\n[ \t]*Version 2\.0, January 2004\n[\s\S]*?END OF TERMS AND CONDITIONS[ \t]*$/gm,
    '$1Apache License, Version 2.0: on Debian systems the full text is in\n$1/usr/share/common-licenses/Apache-2.0.',
  );
}

/**
 * The copyright statements of a license or notice text: its lines that start with "Copyright" (or
 * "(c)" and a year), without that word and without "All rights reserved".
 */
export function holdersOf(text) {
  const out = [];
  for (const raw of text.replace(/\r\n?/g, '\n').split('\n')) {
    const line = raw.replace(/^[\s*#/!;>|-]+/, '').replace(/\*\*/g, '').trim();
    const m = /^copyright\b\s*(.*)$/i.exec(line) ?? /^(?:\(c\)|©)\s*(\d.*)$/i.exec(line);
    if (!m) continue;
    const rest = m[1]
      .replace(/^(?:(?:\(c\)|©|:)\s*)+/i, '')
      .replace(/[,.]?\s*all rights reserved\.?\s*$/i, '')
      .trim();
    if (!/^[\p{L}\p{N}<"']/u.test(rest)) continue;
    // "Copyright notice", "copyright holders", "copyright and license", ...: words about copyright.
    if (/^(?:notices?|holders?|owners?|and|or|law|licen[cs]es?|statements?|the above|information|remains|is|of|to|on|for|in|by the)\b/i.test(rest)) continue;
    // One form per holder: no closing full stop (but "Inc."), single spaces.
    out.push(rest.replace(/\s+/g, ' ').replace(/(?<!\b(?:Inc|Ltd|Co|Corp|Jr|al|etc))\.$/, ''));
  }
  return [...new Set(out)];
}

/** A package's license and notice files, license first: LICENSE, LICENSE-MIT.txt, UNLICENSE, NOTICE... */
function licenseFiles(dir) {
  const names = readdirSync(dir).sort();
  const license = names.filter((f) => /^(un)?(licen[cs]e|copying)(-[\w.-]+)?(\.(md|txt))?$/i.test(f));
  const notice = names.filter((f) => /^notice(\.(md|txt))?$/i.test(f));
  return [...license, ...notice].map((f) => readFileSync(path.join(dir, f), 'utf8'));
}

/** A package.json license, checked to be one short name (an SPDX expression needs someone to decide). */
function shortName(license, what) {
  if (typeof license !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9.+-]*$/.test(license)) {
    throw new Error(`${what}: license ${JSON.stringify(license)} is not a single license name; say in packaging/copyright.mjs how to name it`);
  }
  return license;
}

/** npm packages of the production tree, from the lockfile: { key, name, label, license, dir }. */
function productionPackages(root, lock) {
  const out = [];
  for (const [key, meta] of Object.entries(lock.packages)) {
    // Optional ones are ws's native speed-ups, kept external by build.mjs; types are never bundled.
    if (!key || meta.dev || meta.optional || key.includes('node_modules/@types/')) continue;
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    // An alias (uWebSockets.js -> @trufflesuite/uws-js-unofficial) is named as installed, with what it is.
    const label = `${name} ${meta.version}${meta.name && meta.name !== name ? ` (${meta.name})` : ''}`;
    out.push({ key, name: meta.name ?? name, label, license: shortName(meta.license, `npm package ${label}`), dir: path.join(root, key) });
  }
  return out.sort((a, b) => a.label.localeCompare(b.label) || a.key.localeCompare(b.key));
}

/** The target of `runtimePkg` (npm package of its Node runtime) and its uWebSockets.js addon. */
function addonOf(root, lock, runtimePkg) {
  const target = Object.values(TARGETS).find((t) => t.pkg === runtimePkg);
  if (!target) throw new Error(`${runtimePkg} is the runtime of no target of scripts/sea-runtime.mjs`);
  const { dir } = UWS_ADDONS[target.abi];
  const file = uwsAddonFileName(target.uwsArch, 'linux', target.abi);
  const key = Object.keys(lock.packages)
    .filter((k) => k && `node_modules/${dir}/`.startsWith(`${k}/`))
    .sort((a, b) => b.length - a.length)[0];
  const meta = lock.packages[key];
  const components = ADDON_COMPONENTS[target.abi];
  if (!components) throw new Error(`no list of what the ABI ${target.abi} uWebSockets.js addon links: add it to packaging/copyright.mjs`);
  const bytes = readFileSync(path.join(root, 'node_modules', dir, file));
  for (const c of components) {
    for (const marker of c.markers) {
      if (!bytes.includes(marker)) throw new Error(`${file} no longer contains "${marker}" (${c.name}): look again at what it links and update packaging/copyright.mjs`);
    }
    for (const marker of c.absent ?? []) {
      if (bytes.includes(marker)) throw new Error(`${file} now names "${marker}" (${c.name} no longer linked statically?): look again at what it links and update packaging/copyright.mjs`);
    }
  }
  return { file, label: `${meta.name ?? key} ${meta.version}`, components };
}

/** The copyright file for a package whose executable holds the runtime of npm tarball `runtimeTgz`. */
export function copyrightFile(root, runtimePkg, runtimeTgz) {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
  const nodeLicense = shortenApache2(execFileSync('tar', ['-xzOf', runtimeTgz, 'package/LICENSE'], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }));
  const addon = addonOf(root, lock, runtimePkg);

  // Every component of the executable: its line in the Comment, its holders, and per license short
  // name the text it ships (undefined: none; the paragraph's generic text is its license). `label`
  // names it above its texts.
  const components = [
    {
      line: `- voice-hub ${version}, with its own C addons (src/native): MIT`,
      holders: ['voice-hub developers'],
      texts: [['MIT', undefined]],
    },
    {
      line: `- the Node.js runtime, ${runtimePkg} (the official build, from the npm registry): Node.js`,
      // Node's own notices; those of the libraries it bundles are in its license text.
      holders: [...holdersOf(nodeLicense.split(/^The externally maintained libraries/m)[0]), 'the authors of the libraries Node.js bundles, named in its license text'],
      texts: [['Node.js', nodeLicense]],
    },
  ];
  for (const p of productionPackages(root, lock)) {
    const files = existsSync(p.dir) ? licenseFiles(p.dir).map(shortenApache2) : [];
    const text = files.length ? files.join('\n\n') : undefined;
    const holders = text ? holdersOf(text) : [];
    components.push({
      line: `- npm package ${p.label}: ${p.license}${text ? '' : ' (no license file; its package.json names the license)'}`,
      holders: holders.length ? holders : [`the authors of ${p.name}`],
      texts: [[p.license, text]],
      label: `npm package ${p.label}`,
      bare: p.label,
    });
  }
  components.push({ line: `- the uWebSockets.js addon ${addon.file}, of npm package ${addon.label}, which links statically:`, holders: [], texts: [] });
  for (const c of addon.components) {
    components.push({
      line: `  - ${c.name}, ${c.what}: ${[...new Set(c.texts.map(([n]) => n))].join(' and ')}`,
      holders: c.holders,
      texts: c.texts.map(([n, file]) => [n, licenseFileText(file)]),
      label: `${c.name}, in ${addon.file}`,
      note: c.note,
    });
  }

  // Per short name, in order of first use: the texts of its components, identical ones once.
  const byName = new Map();
  for (const c of components) {
    for (const [name, text] of c.texts) {
      if (!byName.has(name)) byName.set(name, { texts: new Map(), bare: [] });
      const entry = byName.get(name);
      if (text === undefined) {
        if (c.bare) entry.bare.push(c.bare);
        continue;
      }
      const key = text.replace(/\r\n?/g, '\n').trim();
      if (!entry.texts.has(key)) entry.texts.set(key, []);
      if (c.label) entry.texts.get(key).push(c.label);
    }
  }
  const names = [...byName.keys()];
  const holders = [...new Set(components.flatMap((c) => c.holders))];
  const notes = components.filter((c) => c.note).map((c) => `${c.label}: ${c.note.replace(/\s*\n\s*/g, ' ')}`);

  const parts = [
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: voice-hub
Comment: /usr/bin/voice-hub is a Node.js single executable application: the
 Node.js runtime (${runtimePkg}, official build from the npm registry),
 with the voice-hub program, the npm packages of its production dependency
 tree and native addons bundled into it. Its Files paragraph names each
 component; the paragraph of each license holds the texts of the components
 under it, each as it ships its own.

Files: *
Copyright: voice-hub developers
License: MIT

Files: usr/bin/voice-hub
Copyright: ${holders.join('\n ')}
License: ${names.join(' and ')}
Comment: The components of the executable, with their licenses:
${indent([components.map((c) => c.line).join('\n'), ...notes].join('\n\n'))}`,
  ];
  for (const name of names) {
    const { texts, bare } = byName.get(name);
    const generic = GENERIC[name];
    if (!generic && !texts.size) throw new Error(`license ${name}: no text to give it; add one to GENERIC in packaging/copyright.mjs`);
    if (bare.length && !generic) throw new Error(`license ${name} of ${bare.join(', ')}: no license file, and no text for ${name} in GENERIC of packaging/copyright.mjs`);
    const blocks = [];
    if (generic) blocks.push(generic);
    if (bare.length) blocks.push(`The npm packages ${bare.join(', ')} ship no license file: their package.json names this license, whose text is above.`);
    if (generic && texts.size) blocks.push('The components under this license that ship a text of their own, each with that text:');
    for (const [text, labels] of texts) blocks.push(labels.length ? `-- ${labels.join(', ')} --\n\n${text}` : text);
    parts.push(`License: ${name}\n${indent(blocks.join('\n\n'))}`);
  }
  return parts.join('\n\n') + '\n';
}
