// JSON nesting, on a real hub over a raw WebSocket, limited as ASP.NET Core limits it: its hub protocol
// and handshake read with a Utf8JsonReader whose MaxDepth is 64 (the message's own object counts), so
// a 65th level, wherever it sits, closes the connection (or fails the handshake); 64 levels are read.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { answersTo, jsonRecord, RawClient, rawMessages, startHub, type TestHub } from './helpers.js';
import { withTimeout } from '../support/wait.js';

const RS = '\u001e';
/** `levels` arrays nested, innermost holding 1: inside the message's object, that object makes one more level. */
const nested = (levels: number): string => `${'['.repeat(levels)}1${']'.repeat(levels)}`;


describe('JSON nesting is limited to 64 levels, as ASP.NET Core reads it', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  it('64 levels in arguments are read (the object, arguments, and 62 more)', async () => {
    const deep = nested(62);
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord(`{"type":1,"invocationId":"i","target":"Echo","arguments":[${deep}]}`)), [
      { type: 3, invocationId: 'i', result: JSON.parse(deep) },
      { type: 3, invocationId: 'e', result: 1 },
    ]);
  });

  const closing: [string, string][] = [
    ['65 levels in arguments', `{"type":1,"invocationId":"i","target":"Echo","arguments":[${nested(63)}]}`],
    ['65 levels in a property nobody reads, on a Ping', `{"type":6,"extra":${nested(64)}}`],
    ['65 levels of objects on an unknown type', `{"type":99,"x":${'{"a":'.repeat(64)}1${'}'.repeat(64)}}`],
  ];
  for (const [name, text] of closing) {
    it(`closes on ${name}`, async () => {
      assert.deepEqual(await answersTo(hub, 'json', jsonRecord(text)), [{ type: 7, error: 'Connection closed with an error.', allowReconnect: true }]);
    });
  }

  it('a handshake nesting 65 levels fails; 64 levels pass', async () => {
    const refused = await RawClient.connect(hub.url);
    refused.send(`{"protocol":"json","version":1,"x":${nested(64)}}${RS}`);
    assert.deepEqual(rawMessages('json', await refused.next()), [{ error: 'An unexpected error occurred during connection handshake.' }]);
    await withTimeout(refused.closed, 3000, 'socket close');
    const taken = await RawClient.connect(hub.url);
    taken.send(`{"protocol":"json","version":1,"x":${nested(63)}}${RS}`);
    assert.deepEqual(rawMessages('json', await taken.next()), [{}]);
    taken.ws.close();
  });
});
