// JSON hub messages whose known properties have the wrong type, on a real hub over a raw WebSocket.
// ASP.NET Core's JsonHubProtocol reads every property it knows as it meets it, before it looks at the
// message type: a mistyped `target`, `arguments`, `invocationId`, `error`, `allowReconnect`,
// `sequenceId`, `headers` or `streamIds` (null included where it reads an object or an array) closes the
// connection with an error, on a Ping or an unknown type as on an Invocation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { answersTo, jsonRecord, startHub, type TestHub } from './helpers.js';

const CLOSE = { type: 7, error: 'Connection closed with an error.', allowReconnect: true };
const ECHOED = { type: 3, invocationId: 'e', result: 1 };


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
    // ReadAsString refuses null as it refuses a number: only the integers (type aside) take null as absent.
    ['an Invocation with a null invocationId', '{"type":1,"invocationId":null,"target":"Echo","arguments":[2]}'],
    ['a Ping with a null invocationId', '{"type":6,"invocationId":null}'],
    ['a Close with a null error', '{"type":7,"error":null}'],
    ['a Completion with a null error', '{"type":3,"invocationId":"i","error":null}'],
    ['a Ping whose type is written null before it is written 6', '{"type":null,"type":6}'],
  ];
  for (const [name, bad] of closing) {
    it(`closes on ${name}`, async () => {
      assert.deepEqual(await answersTo(hub, 'json', jsonRecord(bad)), [CLOSE]);
    });
  }

  it('properties of the right type, or null where ASP.NET takes null, change nothing on any type', async () => {
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord('{"type":6,"target":"Echo","arguments":[],"invocationId":"x","error":"e","headers":{"a":"b"},"streamIds":[],"sequenceId":3}')), [ECHOED]);
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord('{"type":6,"sequenceId":null}')), [ECHOED]);
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord('{"type":99,"allowReconnect":true,"invocationId":"x","sequenceId":null}')), [ECHOED]);
  });

  it('unknown properties named like members of every object change nothing, numbers included', async () => {
    // An integer property was once looked up by name in a plain object, where `constructor` is found too.
    assert.deepEqual(await answersTo(hub, 'json', jsonRecord('{"type":6,"constructor":1.5,"toString":2,"__proto__":1}')), [ECHOED]);
  });
});
