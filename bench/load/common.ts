// Shared by the load-generator child processes: their input (argv[2] is a JSON file), the Opus
// fixture, counting targets in raw frames without decoding them, and how results go back.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cpuSeconds } from '../lib/proc.js';
import type { Protocol } from '../lib/signalr-raw.js';

export function readInput<T>(): T {
  const file = process.argv[2];
  if (!file) throw new Error('usage: <load script> <input.json>');
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** Real speech, 20 ms Opus packets at 16 kHz mono (scripts/make-opus-fixture.sh), as Base64. */
export function fixturePackets(): string[] {
  return JSON.parse(
    readFileSync(path.join(import.meta.dirname, '../../test/fixtures/speech-16k-mono.packets.json'), 'utf8'),
  ) as string[];
}

/**
 * A needle for a hub target in a raw frame: the JSON `"target":"X"` or the MessagePack string `X`.
 * Audio travels as Base64 text in both protocols' server messages, so the needle cannot hide in it.
 */
export function targetNeedle(protocol: Protocol, target: string): Buffer {
  if (protocol === 'json') return Buffer.from(`"target":"${target}"`);
  return Buffer.concat([Buffer.from([0xa0 | target.length]), Buffer.from(target)]);
}

export function count(frame: Buffer, needle: Buffer): number {
  let n = 0;
  for (let at = frame.indexOf(needle); at !== -1; at = frame.indexOf(needle, at + needle.length)) n++;
  return n;
}

/** CPU seconds of the processes whose pids are given, read together. */
export function cpuOf(pids: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) out[name] = cpuSeconds(pid);
  return out;
}

export function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(a)) out[k] = b[k]! - a[k]!;
  return out;
}

export function emit(result: unknown): void {
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/** Progress and problems go to stderr, which the orchestrator shows when a run fails. */
export function say(text: string): void {
  process.stderr.write(`${text}\n`);
}

/** A growable list of latency samples in ms, cheap to append in a hot path. */
export class Samples {
  private data = new Float64Array(1 << 16);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = v;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}
