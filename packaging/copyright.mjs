// debian/copyright for the packages (machine-readable format 1.0). The package holds one file of its
// own making besides configuration and docs, /usr/bin/voice-hub, and that one file holds every
// component: voice-hub itself (with our C addons), the Node.js runtime (its LICENSE lists every library
// Node bundles), the npm packages of the production dependency tree that esbuild bundles, what some of
// those packages carry compiled or bundled into their own files (the WebAssembly of opus-decoder,
// @wasm-audio-decoders/common and sql.js: libopus, puff, SQLite and Emscripten's runtime; the libraries
// in the Swagger UI files served at /swagger/, as their .LICENSE.txt files list them), and the target's
// uWebSockets.js addon, which links BoringSSL, lsquic (with ls-qpack, ls-hpack, xxHash) and GCC's C++
// runtime statically. The run-time assets (sql.js' wasm, Swagger UI's files, the addons) are appended
// to the executable (scripts/build-binaries.mjs), so they are no path of their own in the package.
//
// In format 1.0, of the Files paragraphs that match a file the last one applies, so each path pattern
// has exactly one paragraph: `*` (voice-hub's own files) and usr/bin/voice-hub. The latter lists the
// holders of every component in Copyright and every license in License, as an `and` expression (led by
// the choices a component offers, "A or B, and ..."); each short name in it has exactly one stand-alone
// License paragraph, which holds the texts of all components under that license, each text as its
// component ships it (they carry the copyright notices those licenses require to be reproduced),
// identical texts once. Texts of components that are not npm packages are kept in packaging/licenses/
// (see its README.md): the build reads nothing from the network.
//
// Not in this file, since the package does not ship it: the system's libopus, which our opus addon opens
// with dlopen when it is installed (libopus0 is a Recommends of the package, not part of it).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TARGETS } from '../scripts/sea-runtime.mjs';
import { SWAGGER_UI_FILES, UWS_ADDONS, uwsAddonFileName } from '../src/runtime/asset-manifest.mjs';
import {
  WIDTH, MIT, GENERIC, licenseFileText, ADDON_COMPONENTS, EMBEDDED, SWAGGER_LIBRARIES, licenseComments, NOTICE_FILES, NOTICE_NAME,
} from './copyright-components.mjs';


/** Every file of a package's folder, its own node_modules aside, relative to the folder. */
function packageFiles(dir, rel = '') {
  return readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const name = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : packageFiles(dir, name);
    return [name];
  });
}

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
const LICENSE_FILE = /^(un)?(licen[cs]e|copying)(-[\w.-]+)?(\.(md|txt))?$/i;
const NOTICE_FILE = /^notice(\.(md|txt))?$/i;
function licenseFiles(dir) {
  const names = readdirSync(dir).sort();
  const license = names.filter((f) => LICENSE_FILE.test(f));
  const notice = names.filter((f) => NOTICE_FILE.test(f));
  return [...license, ...notice].map((f) => readFileSync(path.join(dir, f), 'utf8'));
}

/**
 * Fails unless every notice or license file of the production tree (NOTICE_NAME) is one that
 * licenseFiles() includes, a shipped Swagger UI `.LICENSE.txt` (or one of a bundle that does not ship),
 * or listed in NOTICE_FILES.
 */
function checkNoticeFiles(packages) {
  const unknown = [];
  for (const p of packages) {
    if (!existsSync(p.dir)) continue;
    for (const rel of packageFiles(p.dir)) {
      const base = path.posix.basename(rel);
      if (!NOTICE_NAME.test(base)) continue;
      if (rel === base && (LICENSE_FILE.test(base) || NOTICE_FILE.test(base))) continue;
      if (p.name === 'swagger-ui-dist' && rel === base && /\.LICENSE\.txt$/.test(base)) continue;
      if (!NOTICE_FILES[`${p.name}/${rel}`]) unknown.push(`${p.key}/${rel}`);
    }
  }
  if (unknown.length) {
    throw new Error(`notice or license files that packaging/copyright.mjs neither includes nor explains: ${unknown.join(', ')}; see what they cover and add them (NOTICE_FILES, EMBEDDED)`);
  }
}

/**
 * The libraries bundled into the Swagger UI files that ship, from the `.LICENSE.txt` files that ship
 * beside them: { files, libraries: [{ ...SWAGGER_LIBRARIES entry, bundles: [file], texts: [text] }] }.
 */
function swaggerNotices(dir) {
  const files = SWAGGER_UI_FILES.filter((f) => f.endsWith('.LICENSE.txt'));
  const found = new Map();
  for (const file of files) {
    const bundle = file.replace(/\.LICENSE\.txt$/, '');
    if (!SWAGGER_UI_FILES.includes(bundle)) throw new Error(`swagger-ui-dist: ${file} ships without ${bundle}`);
    for (const text of licenseComments(readFileSync(path.join(dir, file), 'utf8'))) {
      const matches = SWAGGER_LIBRARIES.filter((l) => l.match.test(text));
      if (matches.length !== 1) throw new Error(`swagger-ui-dist ${file}: a notice that ${matches.length ? 'several' : 'no'} SWAGGER_LIBRARIES of packaging/copyright.mjs match${matches.length ? '' : ' (add it)'}: ${JSON.stringify(text.slice(0, 200))}`);
      const lib = matches[0];
      for (const holder of holdersOf(text)) {
        if (!lib.holders.includes(holder)) throw new Error(`swagger-ui-dist ${file}: ${lib.name} names holder "${holder}", not among its holders in SWAGGER_LIBRARIES of packaging/copyright.mjs`);
      }
      if (!found.has(lib)) found.set(lib, { bundles: [], texts: [] });
      const entry = found.get(lib);
      if (!entry.bundles.includes(bundle)) entry.bundles.push(bundle);
      if (!entry.texts.includes(text)) entry.texts.push(text);
    }
  }
  return { files, libraries: [...found].map(([lib, entry]) => ({ ...lib, ...entry })) };
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
  const packages = productionPackages(root, lock);
  checkNoticeFiles(packages);
  const embedded = new Set();
  for (const p of packages) {
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
    const inside = EMBEDDED[p.name];
    if (inside) {
      embedded.add(p.name);
      for (const [file, marker] of inside.markers) {
        if (!readFileSync(path.join(p.dir, file)).includes(marker)) throw new Error(`npm package ${p.label}: ${file} no longer contains "${marker}": look again at what it carries and update EMBEDDED in packaging/copyright.mjs`);
      }
      components.push({ line: `- npm package ${p.label} carries ${inside.holds}`, holders: [], texts: [] });
      for (const c of inside.components) {
        const what = typeof c.what === 'function' ? c.what(p.dir) : c.what;
        const names = [...new Set(c.texts.map(([n]) => n))];
        components.push({
          line: `  - ${c.name}, ${what}: ${names.length ? names.join(' and ') : 'no license stated (see below)'}`,
          holders: c.holders,
          texts: c.texts.map(([n, t]) => [n, typeof t === 'function' ? t(p.dir) : licenseFileText(t)]),
          label: `${c.name}, in npm package ${p.label}`,
          note: c.note,
        });
      }
    }
    if (p.name === 'swagger-ui-dist') {
      const { files: notices, libraries } = swaggerNotices(p.dir);
      components.push({
        line: `- npm package ${p.label}: its ${notices.map((f) => f.replace(/\.LICENSE\.txt$/, '')).join(' and ')}, which voice-hub serves at /swagger/, bundle these libraries, as the .LICENSE.txt files served beside them list them:`,
        holders: [],
        texts: [],
      });
      for (const lib of libraries) {
        const names = Array.isArray(lib.license) ? lib.license : [lib.license];
        components.push({
          line: `  - ${lib.name}, in ${lib.bundles.join(' and ')}${lib.what ? ` (${lib.what})` : ''}: ${names.join(' or ')}`,
          holders: lib.holders,
          texts: names.flatMap((n) => lib.texts.map((t) => [n, t])),
          choice: names.length > 1 ? names : undefined,
          label: `${lib.name}, in ${lib.bundles.join(' and ')} of npm package ${p.label}`,
        });
      }
    }
  }
  const stale = Object.keys(EMBEDDED).filter((name) => !embedded.has(name));
  if (stale.length) throw new Error(`EMBEDDED of packaging/copyright.mjs names ${stale.join(', ')}, no npm package of the production tree: remove them`);
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
  // The License expression: the choices first ("A or B, and ..."), then every name used without one.
  const choices = [...new Set(components.filter((c) => c.choice).map((c) => c.choice.join(' or ')))];
  const required = [...new Set(components.filter((c) => !c.choice).flatMap((c) => c.texts.map(([n]) => n)))];
  const expression = [...choices, required.join(' and ')].join(', and ');
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
License: ${expression}
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
