// What follows a JSON hub message's object in its record, on a real hub over a raw WebSocket, read as
// ASP.NET Core reads it: its Utf8JsonReader stops at the end of the first object and never reads the
// rest, so a NUL a C client counted into its message, or a second object before the separator, does
// not break the message (the second object is not run); a first object that is malformed still closes
// the connection. The handshake request is read the same way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RawClient, startHub, type RawFrame, type TestHub } from './helpers.js';
import { withTimeout } from '../support/wait.js';

const RS = '\u001e';
const CLOSE = { type: 7, error: 'Connection closed with an error.' };
const ECHOED = { type: 3, invocationId: 'e', result: 1 };
const json = (frame: RawFrame): unknown[] => frame.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s));

/** Sends `record` (without its separator) then an Echo invocation; returns what the hub sent until its Close or the Echo's completion. */
async function answerTo(hub: TestHub, record: string): Promise<unknown[]> {
  const c = await RawClient.connect(hub.url);
  await c.handshake('json');
  c.send(`${record}${RS}{"type":1,"invocationId":"e","target":"Echo","arguments":[1]}${RS}`);
  const messages: unknown[] = [];
  for (;;) {
    let frame: RawFrame;
    try {
      frame = await c.next();
    } catch {
      break;
    }
    messages.push(...json(frame));
    const last = messages.at(-1) as { type: number; invocationId?: string };
    if (last.type === 7 || last.invocationId === 'e') break;
  }
  c.ws.close();
  await withTimeout(c.closed, 3000, 'socket close');
  return messages;
}

describe('JSON: only the first object of a record is read, as ASP.NET Core reads it', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  it('an invocation followed by a NUL runs', async () => {
    assert.deepEqual(await answerTo(hub, '{"type":1,"invocationId":"i","target":"Echo","arguments":["a}\\"{"]}\u0000'), [
      { type: 3, invocationId: 'i', result: 'a}"{' },
      ECHOED,
    ]);
  });

  it('a second object in the same record is not read', async () => {
    assert.deepEqual(await answerTo(hub, '{"type":6} {"type":1,"invocationId":"i","target":"Echo","arguments":[2]}'), [ECHOED]);
  });

  const closing: [string, string][] = [
    ['a first object that does not end', '{"type":6,"x":[1}'],
    ['a first object with a trailing comma, then more', '{"type":6,}{"type":6}'],
    ['text before the object', 'x{"type":6}'],
  ];
  for (const [name, record] of closing) {
    it(`closes on ${name}`, async () => {
      assert.deepEqual(await answerTo(hub, record), [CLOSE]);
    });
  }

  it('a handshake request followed by a NUL is taken', async () => {
    const c = await RawClient.connect(hub.url);
    c.send(`{"protocol":"json","version":1}\u0000${RS}{"type":1,"invocationId":"e","target":"Echo","arguments":[1]}${RS}`);
    assert.deepEqual(json(await c.next()), [{}]);
    assert.deepEqual(json(await c.next()), [ECHOED]);
    c.ws.close();
  });
});
