// "Did you mean ...?": the known name nearest in spelling to a mistyped one (configuration keys,
// command-line flags and commands), or none when nothing is close enough to be a likely typo.

export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The candidate nearest to `word`, ignoring case: at most 2 edits away (a sixth of the candidate's
 * length for long names), and fewer edits than either has letters, so `x` does not "mean" `h`.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  const lower = word.toLowerCase();
  for (const name of candidates) {
    const limit = Math.min(Math.max(2, Math.floor(name.length / 6)), lower.length - 1, name.length - 1);
    // The distance is at least the difference in length: a name typed 10,000 characters long is
    // compared with no candidate, where comparing it cost milliseconds per candidate.
    if (Math.abs(lower.length - name.length) > limit) continue;
    const distance = editDistance(lower, name.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
