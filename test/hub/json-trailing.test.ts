// What follows a JSON hub message's object in its record, on a real hub over a raw WebSocket, read as
// ASP.NET Core reads it: its Utf8JsonReader stops at the end of the first object and never reads the
// rest, so a NUL a C client counted into its message, or a second object before the separator, does
// not break the message (the second object is not run); a first object that is malformed still closes
// the connection. The handshake request is read the same way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { answersTo, jsonRecord, RawClient, rawMessages, startHub, type TestHub } from './helpers.js';

const RS = '\u001e';
const CLOSE = { type: 7, error: 'Connection closed with an error.', allowReconnect: true };
const ECHOED = { type: 3, invocationId: 'e', result: 1 };


describe('JSON: only the first object of a record is read, as ASP.NET Core reads it', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  it('an invocation followed by a NUL runs', async () => {
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord('{"type":1,"invocationId":"i","target":"Echo","arguments":["a}\\"{"]}\u0000')), [
      { type: 3, invocationId: 'i', result: 'a}"{' },
      ECHOED,
    ]);
  });

  it('a second object in the same record is not read', async () => {
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord('{"type":6} {"type":1,"invocationId":"i","target":"Echo","arguments":[2]}')), [ECHOED]);
  });

  const closing: [string, string][] = [
    ['a first object that does not end', '{"type":6,"x":[1}'],
    ['a first object with a trailing comma, then more', '{"type":6,}{"type":6}'],
    ['text before the object', 'x{"type":6}'],
  ];
  for (const [name, record] of closing) {
    it(`closes on ${name}`, async () => {
      assert.deepEqual(await answersTo(hub, 'json', jsonRecord(record)), [CLOSE]);
    });
  }

  it('a handshake request followed by a NUL is taken', async () => {
    const c = await RawClient.connect(hub.url);
    c.send(`{"protocol":"json","version":1}\u0000${RS}{"type":1,"invocationId":"e","target":"Echo","arguments":[1]}${RS}`);
    assert.deepEqual(rawMessages('json', await c.next()), [{}]);
    assert.deepEqual(rawMessages('json', await c.next()), [ECHOED]);
    c.ws.close();
  });
});
