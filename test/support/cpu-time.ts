// The CPU time a process has used, for the tests that bound what a service spends on hostile input or
// while idle.
import { readFileSync } from 'node:fs';

/** utime + stime of the process, in seconds (clock ticks of 1/100 s on Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
