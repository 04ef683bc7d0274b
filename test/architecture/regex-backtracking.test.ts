// No regular expression literal in src/ may take more than linear time on a long run of the characters
// it repeats. A pattern such as /^[ \t]+|[ \t]+$/g (which trimmed the Host header) retries its second
// branch from every position inside a run of blanks: a 32 KiB header of them held the event loop for
// seconds. Two shapes do that, and this reads every literal for them:
// - a branch that is not anchored (no leading `^`, no sticky flag) and repeats without bound before
//   something more that can fail (`/\/+$/`, `/\s*\n/`): each start position inside the run scans it again;
// - a group repeated without bound around a part that also repeats without bound (`/(a+)+$/`): the ways
//   to split a run grow exponentially.
// Patterns built with `new RegExp` read the service's own files only (the database schema, fixed
// digit counts), and are not read here.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

const SRC = path.join(import.meta.dirname, '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts') && !name.endsWith('.d.mts') ? [full] : [];
  });
}

/** Every regular expression literal of a file, as written (`/.../flags`). */
function regexLiterals(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) found.push(node.getText());
    node.forEachChild(visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true));
  return found;
}

interface Atom {
  /** The atom's text, e.g. `\s`, `[a-z]`, `(?:a|b)`. */
  text: string;
  /** `*`, `+` or `{n,}` after it. */
  unbounded: boolean;
  /** For a group: its content. */
  inner?: string;
}

/** The length of the atom at `i` (an escape, a class, a group, or one character). */
function atomEnd(p: string, i: number): number {
  if (p[i] === '\\') return i + 2;
  if (p[i] === '[') {
    let j = i + 1;
    if (p[j] === '^') j++;
    if (p[j] === ']') j++;
    while (j < p.length && p[j] !== ']') j += p[j] === '\\' ? 2 : 1;
    return j + 1;
  }
  if (p[i] === '(') {
    let depth = 0;
    for (let j = i; j < p.length; j++) {
      if (p[j] === '\\') j++;
      else if (p[j] === '[') j = atomEnd(p, j) - 1;
      else if (p[j] === '(') depth++;
      else if (p[j] === ')' && --depth === 0) return j + 1;
    }
    return p.length;
  }
  return i + 1;
}

/** The top-level branches of a pattern (split at `|` outside classes and groups). */
function branches(p: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < p.length; i = atomEnd(p, i)) {
    if (p[i] === '|') {
      out.push(p.slice(start, i));
      start = i + 1;
    }
  }
  out.push(p.slice(start));
  return out;
}

/** A branch as atoms with their quantifiers. */
function atoms(branch: string): Atom[] {
  const out: Atom[] = [];
  let i = 0;
  while (i < branch.length) {
    const end = atomEnd(branch, i);
    const text = branch.slice(i, end);
    let j = end;
    let unbounded = false;
    if (branch[j] === '*' || branch[j] === '+') {
      unbounded = true;
      j++;
    } else if (branch[j] === '{') {
      const close = branch.indexOf('}', j);
      unbounded = /^\{\d+,\}$/.test(branch.slice(j, close + 1));
      j = close + 1;
    } else if (branch[j] === '?') {
      j++;
    }
    if (branch[j] === '?') j++; // lazy
    const inner = text.startsWith('(') ? text.slice(text.startsWith('(?') ? (text[2] === '<' && text[3] !== '=' && text[3] !== '!' ? text.indexOf('>') + 1 : 3) : 1, -1) : undefined;
    out.push({ text, unbounded, ...(inner === undefined ? {} : { inner }) });
    i = j;
  }
  return out;
}

/** The one character an atom stands for (`a`, `\{`), or undefined for a class, group or escape class. */
const literalChar = (text: string): string | undefined =>
  text.length === 1 && !'.^$'.includes(text) ? text : text.length === 2 && text[0] === '\\' && !/[A-Za-z0-9]/.test(text[1]!) ? text[1] : undefined;

const repeatsUnbounded = (pattern: string): boolean =>
  branches(pattern).some((b) => atoms(b).some((a) => a.unbounded || (a.inner !== undefined && repeatsUnbounded(a.inner))));

/** Why the pattern can take more than linear time, or undefined. */
export function backtrackingProblem(literal: string): string | undefined {
  const slash = literal.lastIndexOf('/');
  const pattern = literal.slice(1, slash);
  const sticky = literal.slice(slash + 1).includes('y');
  const nested = (p: string): string | undefined => {
    for (const b of branches(p)) {
      for (const a of atoms(b)) {
        if (a.inner === undefined) continue;
        if (a.unbounded && repeatsUnbounded(a.inner)) return `the group ${a.text} repeats without bound around a part that also does`;
        const deeper = nested(a.inner);
        if (deeper) return deeper;
      }
    }
    return undefined;
  };
  const inGroups = nested(pattern);
  if (inGroups) return inGroups;
  if (sticky) return undefined;
  for (const b of branches(pattern)) {
    if (b.startsWith('^')) continue;
    const list = atoms(b);
    let last = list.length - 1;
    while (last >= 0 && list[last]!.text === ')') last--;
    // A branch that starts with a character its runs cannot hold (`\{[^{}]+\}`) starts once per run.
    const first = list[0] !== undefined && !list[0].unbounded ? literalChar(list[0].text) : undefined;
    const runBeforeMore = list.findIndex((a, k) => k < last && (a.unbounded || (a.inner !== undefined && repeatsUnbounded(a.inner)))
      && (first === undefined || new RegExp(`^(?:${a.text})`).test(first)));
    if (runBeforeMore >= 0) {
      return `the branch /${b}/ is not anchored and repeats ${list[runBeforeMore]!.text} without bound before more that can fail`;
    }
  }
  return undefined;
}

describe('regular expressions in src/ run in linear time', () => {
  it('reads the shapes that backtrack (the checker itself)', () => {
    assert.match(backtrackingProblem('/^[ \\t]+|[ \\t]+$/g') ?? '', /the branch \/\[ \\t\]\+\$\/ is not anchored/);
    assert.match(backtrackingProblem('/\\/+$/') ?? '', /not anchored and repeats \\\/ without bound/);
    assert.match(backtrackingProblem('/\\s*[\\r\\n]+\\s*/g') ?? '', /not anchored/);
    assert.match(backtrackingProblem('/^(a+)+$/') ?? '', /the group \(a\+\) repeats without bound/);
    assert.match(backtrackingProblem('/^x(?:y|(?:\\s{2,})*)z$/') ?? '', /the group \(\?:\\s\{2,\}\) repeats/);
    assert.equal(backtrackingProblem('/^[ \\t]+$/'), undefined);
    assert.equal(backtrackingProblem('/[\\r\\n]+/g'), undefined);
    assert.equal(backtrackingProblem('/-?(?:0|[1-9]\\d*)(?:\\.\\d+)?/y'), undefined);
    assert.equal(backtrackingProblem('/^\\[|\\]$/g'), undefined);
    assert.equal(backtrackingProblem('/[%+#/\\u0000-\\u001f]/g'), undefined);
    assert.equal(backtrackingProblem('/_[0-9a-f]{8}$/'), undefined);
    assert.equal(backtrackingProblem('/\\{([^{}]+)\\}/g'), undefined);
    assert.match(backtrackingProblem('/\\{([^}]+)\\}/g') ?? '', /not anchored/);
  });

  it('finds no such literal in src/', () => {
    const files = sourceFiles(SRC);
    const found = files.flatMap((file) => regexLiterals(file).map((literal) => ({ file: path.relative(SRC, file), literal })));
    // The walk found the literals there are (a broken walk would pass on nothing).
    assert.ok(found.length > 30, `only ${found.length} regular expression literals found`);
    const problems = found.flatMap(({ file, literal }) => {
      const why = backtrackingProblem(literal);
      return why ? [`${file}: ${literal}: ${why}`] : [];
    });
    assert.deepEqual(problems, []);
  });
});
