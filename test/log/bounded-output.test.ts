// The log's output to a reader that stops reading (src/log/bounded-output.ts), over a real stream socket
// (a Unix one, as journald's): the reader reads nothing for a while, then everything.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { BoundedOutput } from '../../src/log/bounded-output.js';
import { tmpDir } from '../support/tmp.js';
import { waitUntil } from '../support/wait.js';

const LINES = 2000;
const MAX_BYTES = 256 * 1024;

test('lines past the bound are dropped while the reader is away, and counted in one line once it caught up', async () => {
  const socketPath = path.join(tmpDir('voice-hub-log-'), 'reader.sock');
  let reader: net.Socket | undefined;
  let out = '';
  const server = net.createServer((socket) => {
    reader = socket;
    socket.pause();
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (out += d));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  const writer = net.connect(socketPath);
  await new Promise<void>((resolve) => writer.once('connect', resolve));
  await waitUntil(() => reader !== undefined, 'the reader');
  try {
    const output = new BoundedOutput(writer, (count) => `dropped ${count}`, MAX_BYTES);
    let most = 0;
    for (let i = 0; i < LINES; i++) {
      output.write(`line ${i} ${'x'.repeat(1000)}`);
      most = Math.max(most, writer.writableLength);
    }
    // What waits never passes the bound by more than the line that crossed it.
    assert.ok(most < MAX_BYTES + 1100, `${most} bytes waited`);

    reader!.resume();
    await waitUntil(() => /dropped \d+\n/.test(out), 'the line counting the dropped lines', 10_000);
    const lines = out.split('\n').filter(Boolean);
    const dropped = Number(/^dropped (\d+)$/.exec(lines.at(-1)!)![1]);
    const written = lines.slice(0, -1);
    assert.ok(dropped > 0, 'some lines were dropped');
    assert.equal(written.length + dropped, LINES);
    // The lines written are the first ones, whole and in order: nothing is dropped from the middle.
    written.forEach((l, i) => assert.equal(l, `line ${i} ${'x'.repeat(1000)}`));

    // Once caught up, lines go out again, without a second count.
    output.write('after');
    await waitUntil(() => out.endsWith('after\n'), 'the next line', 10_000);
    assert.equal(out.match(/dropped/g)?.length, 1);
  } finally {
    writer.destroy();
    server.close();
  }
});
