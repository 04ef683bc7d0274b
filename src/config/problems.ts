// The problems (or warnings) of one load, listed up to a bound. A file with 200,000 empty ApiKeys items or
// 30,000 misspelt keys is one mistake repeated: a report of all of them is read by no one, spread into
// one call it overflowed the stack, and a "did you mean" hint for each cost seconds to minutes. The
// first ones are worded in full; the rest are only counted.

export const MAX_LISTED_PROBLEMS = 20;

export class Problems {
  private readonly listed: string[] = [];
  private unlisted = 0;

  /** `what`: what the count line counts, where the lines are no problems (`ignored environment variables`). */
  constructor(private readonly what?: string) {}

  /**
   * `line` may be a function for wording that costs (a spelling hint): it is called only for a problem
   * that is listed.
   */
  add(line: string | (() => string)): void {
    if (this.listed.length < MAX_LISTED_PROBLEMS) this.listed.push(typeof line === 'string' ? line : line());
    else this.unlisted++;
  }

  get size(): number {
    return this.listed.length + this.unlisted;
  }

  /** The listed lines, then how many more there are. */
  lines(): string[] {
    return this.unlisted === 0 ? [...this.listed] : [...this.listed, `... and ${this.unlisted} more${this.what ? ` ${this.what}` : ''}`];
  }
}
