// Where a process's resident memory is, from /proc/<pid>/smaps: the program's own file (node, or the
// single executable), other files (shared libraries, the uWS addon), malloc's main heap ([heap]) and
// the other anonymous mappings (V8's heap pages, wasm memories, malloc's mmap'd blocks and arenas,
// thread stacks).
import { realpathSync } from 'node:fs';
import { readMappings } from '../../test/support/smaps.js';

export interface MemoryMap {
  program: number;
  libraries: number;
  mallocHeap: number;
  anonymous: number;
  /** The largest anonymous mappings, resident bytes and size, for the notes. */
  largest: { rss: number; size: number }[];
}

export function memoryMap(pid: number): MemoryMap {
  const program = realpathSync(`/proc/${pid}/exe`);
  const out: MemoryMap = { program: 0, libraries: 0, mallocHeap: 0, anonymous: 0, largest: [] };
  for (const { start, end, name, rss } of readMappings(pid)) {
    if (name === program) out.program += rss;
    else if (name === '[heap]') out.mallocHeap += rss;
    else if (name.startsWith('/')) out.libraries += rss;
    else {
      out.anonymous += rss;
      out.largest.push({ rss, size: Number(end - start) });
    }
  }
  out.largest = out.largest.sort((a, b) => b.rss - a.rss).slice(0, 3);
  return out;
}

const mib = (b: number): string => `${(b / 1048576).toFixed(1)} MiB`;

export function describeMemoryMap(m: MemoryMap): string {
  const largest = m.largest.map((l) => `${mib(l.rss)} of ${mib(l.size)}`).join(', ');
  return `program file ${mib(m.program)}, libraries and addons ${mib(m.libraries)}, malloc heap ${mib(m.mallocHeap)}, other anonymous ${mib(m.anonymous)} (largest mappings resident: ${largest})`;
}
