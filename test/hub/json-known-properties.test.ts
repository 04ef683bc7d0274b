// JSON hub messages whose known properties have the wrong type, on a real hub over a raw WebSocket.
// ASP.NET Core's JsonHubProtocol reads every property it knows as it meets it, before it looks at the
// message type: a mistyped `target`, `arguments`, `invocationId`, `error`, `allowReconnect`,
// `sequenceId`, `headers` or `streamIds` (null included where it reads an object or an array) closes the
// connection with an error, on a Ping or an unknown type as on an Invocation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RawClient, startHub, type RawFrame, type TestHub } from './helpers.js';
import { withTimeout } from '../support/wait.js';

const RS = '\u001e';
const CLOSE = { type: 7, error: 'Connection closed with an error.' };
const ECHOED = { type: 3, invocationId: 'e', result: 1 };
const json = (frame: RawFrame): unknown[] => frame.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s));

/** Sends `bad` then an Echo invocation; returns what the hub sent until its Close or the Echo's completion. */
async function answerTo(hub: TestHub, bad: string): Promise<unknown[]> {
  const c = await RawClient.connect(hub.url);
  await c.handshake('json');
  c.send(`${bad}${RS}{"type":1,"invocationId":"e","target":"Echo","arguments":[1]}${RS}`);
  const messages: unknown[] = [];
  for (;;) {
    let frame: RawFrame;
    try {
      frame = await c.next();
    } catch {
      break;
    }
    messages.push(...json(frame));
    const last = messages.at(-1) as { type: number };
    if (last.type === 3 || last.type === 7) break;
  }
  c.ws.close();
  await withTimeout(c.closed, 3000, 'socket close');
  return messages;
}

describe('JSON: known properties are checked whatever the message type, as ASP.NET Core checks them', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  const closing: [string, string][] = [
    ['a Ping with a numeric target', '{"type":6,"target":5}'],
    ['a Ping with arguments that are no array', '{"type":6,"arguments":{}}'],
    ['a Ping with a numeric invocationId', '{"type":6,"invocationId":5}'],
    ['a Ping with headers that are no object', '{"type":6,"headers":[]}'],
    ['a Ping with a string sequenceId', '{"type":6,"sequenceId":"1"}'],
    ['an unknown type with a numeric error', '{"type":99,"error":5}'],
    ['an unknown type with a string allowReconnect', '{"type":99,"allowReconnect":"yes"}'],
    ['an Invocation with a numeric error', '{"type":1,"invocationId":"i","target":"Echo","arguments":[2],"error":5}'],
    ['an Invocation with a sequenceId that is a fraction', '{"type":1,"invocationId":"i","target":"Echo","arguments":[2],"sequenceId":1.5}'],
    ['an Invocation with null headers', '{"type":1,"invocationId":"i","target":"Echo","arguments":[2],"headers":null}'],
    ['an Invocation with null streamIds', '{"type":1,"invocationId":"i","target":"Echo","arguments":[2],"streamIds":null}'],
  ];
  for (const [name, bad] of closing) {
    it(`closes on ${name}`, async () => {
      assert.deepEqual(await answerTo(hub, bad), [CLOSE]);
    });
  }

  it('properties of the right type, or null where ASP.NET takes null, change nothing on any type', async () => {
    assert.deepEqual(await answerTo(hub, '{"type":6,"target":"Echo","arguments":[],"invocationId":null,"error":null,"headers":{"a":"b"},"streamIds":[],"sequenceId":3}'), [ECHOED]);
    assert.deepEqual(await answerTo(hub, '{"type":99,"allowReconnect":true,"invocationId":"x","sequenceId":null}'), [ECHOED]);
  });
});
