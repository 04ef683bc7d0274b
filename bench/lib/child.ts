// Runs a load generator (bench/load/*.ts) as its own process: the load comes from a second process,
// never from the one being measured. Input goes in a JSON file, the result comes back as one
// `RESULT {...}` line on stdout.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir, tsxArgs, type ProcessSet } from './proc.js';

export async function runLoad<T>(procs: ProcessSet, script: string, input: unknown, timeoutMs: number, nodeFlags: string[] = []): Promise<T> {
  const file = path.join(tempDir('load'), 'input.json');
  writeFileSync(file, JSON.stringify(input));
  const child = procs.spawn(process.execPath, [...nodeFlags, ...tsxArgs(`load/${script}`, [file])]);
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), timeoutMs);
  const code = await child.exited;
  clearTimeout(timer);
  const line = child.output().split('\n').find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !line) {
    throw new Error(`load generator ${script} ${code === null ? 'was killed after ' + timeoutMs + ' ms' : 'exited with ' + code}:\n${child.output().slice(-3000)}`);
  }
  return JSON.parse(line.slice('RESULT '.length)) as T;
}
