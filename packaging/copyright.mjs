// debian/copyright for the packages (machine-readable format 1.0): voice-hub itself, the Node.js runtime
// inside the executable (its LICENSE lists every library Node bundles), and the npm packages of the
// production dependency tree that esbuild bundles, each with its own license file.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

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

/** A license text as a copyright-format field continuation: each line indented, blank lines as " .". */
function indent(text) {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/\t/g, '        ')
    .trimEnd()
    .split('\n')
    .map((l) => (l.trim() === '' ? ' .' : ` ${l.trimEnd()}`))
    .join('\n');
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

function licenseFile(dir) {
  const name = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f));
  return name ? readFileSync(path.join(dir, name), 'utf8') : undefined;
}

/** npm packages of the production tree, from the lockfile: [name, version, license, dir]. */
function productionPackages(root) {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const out = [];
  for (const [key, meta] of Object.entries(lock.packages)) {
    // Optional ones are ws's native speed-ups, kept external by build.mjs; types are never bundled.
    if (!key || meta.dev || meta.optional || key.includes('node_modules/@types/')) continue;
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    out.push([name, meta.version, meta.license ?? 'see its license file', path.join(root, key)]);
  }
  return out.sort((a, b) => a[0].localeCompare(b[0]));
}

/** The copyright file for a package whose executable holds the runtime of npm tarball `runtimeTgz`. */
export function copyrightFile(root, runtimePkg, runtimeTgz) {
  const nodeLicense = execFileSync('tar', ['-xzOf', runtimeTgz, 'package/LICENSE'], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const parts = [
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: voice-hub
Comment: /usr/bin/voice-hub is a Node.js single executable application: the
 Node.js runtime (${runtimePkg}, official build from the npm registry),
 with the voice-hub program and the npm packages listed below bundled into it.

Files: *
Copyright: voice-hub developers
License: MIT

Files: usr/bin/voice-hub
Copyright: Node.js contributors and the authors of the libraries Node.js bundles
License: Node.js
Comment: The runtime part of the executable. Its license text follows, as
 Node.js ships it, including the licenses of the libraries it bundles.`,
  ];
  for (const [name, version, license, dir] of productionPackages(root)) {
    const text = existsSync(dir) ? licenseFile(dir) : undefined;
    const comment = `Bundled into usr/bin/voice-hub: npm package ${name} ${version}.${text ? '' : ' It ships no license file; its package.json names the license.'}`;
    const body = text ? `\n${indent(shortenApache2(text))}` : '';
    parts.push(`Files: usr/bin/voice-hub\nCopyright: the authors of ${name}\nLicense: ${license}${body}\nComment: ${comment}`);
  }
  parts.push(`License: MIT\n${indent(MIT)}`);
  parts.push(`License: Node.js\n${indent(shortenApache2(nodeLicense))}`);
  parts.push(`License: Apache-2.0\n On Debian systems the full text of the Apache License 2.0 is in\n /usr/share/common-licenses/Apache-2.0.`);
  return parts.join('\n\n') + '\n';
}
