// The mappings of a process as /proc/<pid>/smaps lists them, with each one's resident size: read here
// once for the tests that look at where a service's memory is and for the bench's memory breakdown.
import { readFileSync } from 'node:fs';

export interface Mapping {
  readonly start: bigint;
  readonly end: bigint;
  /** `rw-p`, `---p`, ... */
  readonly perms: string;
  /** The file, `[heap]`, `[stack]`, ...; '' for an anonymous mapping. */
  readonly name: string;
  /** No file behind it (device 00:00, inode 0). */
  readonly anonymous: boolean;
  /** Resident bytes. */
  rss: number;
}

export function readMappings(pid: number): Mapping[] {
  const mappings: Mapping[] = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ (\S+) (\d+)\s*(.*)$/.exec(line);
    if (head) {
      mappings.push({ start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3]!, name: head[6] ?? '', anonymous: head[4] === '00:00' && head[5] === '0', rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && mappings.length > 0) mappings.at(-1)!.rss = Number(rss[1]) * 1024;
  }
  return mappings;
}
