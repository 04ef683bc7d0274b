// Reading the repository's own documentation in tests: the tracked files, the Markdown links in a
// document, GitHub's anchor for each heading, and the README's install commands (which the booted-root
// test runs as written, as it runs the port-80 commands of docs/operations.md). Pure file reading; no service is started, so docs tests stay fast.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The repository root, found without importing the service (test/support/service.ts starts the app). */
export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** Every file git tracks, relative to the root. Needs a git checkout, as CI's fresh clone is. */
export function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' });
  return out.split('\0').filter((f) => f !== '');
}

export interface MarkdownLink {
  line: number;
  target: string;
}

/** Inline links and images `[text](target)` outside fenced code blocks and code spans. */
export function markdownLinks(text: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  let fenced = false;
  text.split('\n').forEach((raw, i) => {
    if (/^\s*```/.test(raw)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    // A code span is text, not a link, but may be a link's text: `[`a.md`](a.md)` still links.
    const line = raw.replace(/`[^`]*`/g, '``');
    for (const m of line.matchAll(/!?\[(?:[^\]]|\][^(])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push({ line: i + 1, target: m[1]! });
  });
  return links;
}

/**
 * The anchors GitHub gives a document's headings: lower case, punctuation other than `-` and `_`
 * dropped, spaces to `-`; a repeated heading gets `-1`, `-2`, ... Headings in code blocks are not headings.
 */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const raw of text.split('\n')) {
    if (/^\s*```/.test(raw)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!m) continue;
    const base = m[1]!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const INSTALL_HEADING = '### From the Debian package';
const PORT_80_MARKER = '**Port 80**';

/**
 * The commands of the first `sh` block after `marker` in the document `file` (relative to the root).
 * Throws when the marker or the block is missing, so a docs edit cannot silently make a test run nothing.
 */
function shellBlockAfter(file: string, marker: string): string[] {
  const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`${file} has no "${marker}"`);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at))?.[1];
  if (block === undefined) throw new Error(`${file} has no sh block after "${marker}"`);
  return block.trim().split('\n');
}

/** The README's install commands, as a Pi owner types them: the first `sh` block after "From the Debian package". */
export function readmeInstallCommands(): string[] {
  return shellBlockAfter('README.md', INSTALL_HEADING);
}

/** The commands docs/operations.md gives for serving port 80 with the drop-in the package ships. */
export function port80Commands(): string[] {
  return shellBlockAfter('docs/operations.md', PORT_80_MARKER);
}
