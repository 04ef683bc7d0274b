// MessagePack stream ids that cannot be read, after arguments that do or do not bind, on a real hub over
// a raw WebSocket. ASP.NET Core's MessagePack reader binds an invocation's arguments first and returns
// an InvocationBindingFailureMessage when that fails (an unknown method, a wrong count), never reading
// the stream ids after them: that invocation gets its completion error and the connection lives on.
// Only stream ids it does read (after arguments that bound) close the connection.
import { encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { answersTo, startHub, type TestHub } from './helpers.js';

const CLOSE = [7, 'Connection closed with an error.', true];
const ECHOED = [3, {}, 'e', 3, 1];
const message = (items: unknown[]): Uint8Array => writeBinaryMessage(encode(items));

describe('MessagePack: stream ids are read only after the arguments bound, as ASP.NET Core reads them', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  const unreadable: [string, unknown][] = [
    ['nil stream ids', null],
    ['stream ids that are no array', 'x'],
    ['a stream id that is no string', [5]],
  ];
  for (const [name, streamIds] of unreadable) {
    it(`an unknown method with ${name} gets its completion error, and the connection lives on`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', message([1, {}, 'i', 'NoSuch', [], streamIds])), [
        [3, {}, 'i', 1, "Failed to invoke 'NoSuch' due to an error on the server. HubException: Method does not exist."],
        ECHOED,
      ]);
    });

    it(`arguments of the wrong count with ${name} get the binding failure, and the connection lives on`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', message([1, {}, 'i', 'Echo', [1, 2], streamIds])), [
        [3, {}, 'i', 1, "Failed to invoke 'Echo' due to an error on the server."],
        ECHOED,
      ]);
    });

    it(`a streaming call of an unknown method with ${name} gets its completion error`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', message([4, {}, 'i', 'NoSuch', [], streamIds])), [
        [3, {}, 'i', 1, "Failed to invoke 'NoSuch' due to an error on the server. HubException: Method does not exist."],
        ECHOED,
      ]);
    });

    it(`arguments that bind with ${name} close the connection, with no completion`, async () => {
      assert.deepEqual(await answersTo(hub, 'messagepack', message([1, {}, 'i', 'Echo', [1], streamIds])), [CLOSE]);
    });
  }
});
