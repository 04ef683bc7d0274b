// Where a process's resident memory is, from /proc/<pid>/smaps: the program's own file (node, or the
// single executable), other files (shared libraries, the uWS addon), malloc's main heap ([heap]) and
// the other anonymous mappings (V8's heap pages, wasm memories, malloc's mmap'd blocks and arenas,
// thread stacks).
import { readFileSync, realpathSync } from 'node:fs';

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
  let name = '';
  let size = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[3] ?? '';
      size = parseInt(head[2]!, 16) - parseInt(head[1]!, 16);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const bytes = Number(rss[1]) * 1024;
    if (name === program) out.program += bytes;
    else if (name === '[heap]') out.mallocHeap += bytes;
    else if (name.startsWith('/')) out.libraries += bytes;
    else {
      out.anonymous += bytes;
      out.largest.push({ rss: bytes, size });
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
