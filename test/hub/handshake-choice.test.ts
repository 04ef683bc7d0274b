// Which handshake requests the hub takes, on a real hub over a raw WebSocket, as ASP.NET Core decides:
// its protocol resolver matches names ignoring case, and its protocols take any version up to the
// newest (IsVersionSupported is `version <= 2`), while a version that is no Int32 fails the handshake.
import { decode, encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { splitBinaryMessages, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { RawClient, startHub, type RawFrame, type TestHub } from './helpers.js';
import { withTimeout } from '../support/wait.js';

const RS = '\u001e';
const json = (frame: RawFrame): unknown[] => frame.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s));
const mp = (frame: RawFrame): unknown[] => splitBinaryMessages(frame.data, 1 << 30).messages.map((m) => decode(m));

describe('handshake: protocol names and versions as ASP.NET Core takes them', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startHub();
  });
  after(() => hub.stop());

  const accepted: [string, string, number][] = [
    ['JSON', 'json', 1],
    ['Json', 'json', 0],
    ['json', 'json', -1],
    ['MessagePack', 'messagepack', 1],
    ['MESSAGEPACK', 'messagepack', 2],
  ];
  for (const [name, protocol, version] of accepted) {
    it(`"${name}" version ${version} is the ${protocol} protocol`, async () => {
      const c = await RawClient.connect(hub.url);
      c.send(`{"protocol":"${name}","version":${version}}${RS}`);
      const response = await c.next();
      assert.equal(response.data.toString(), `{}${RS}`);
      if (protocol === 'json') {
        c.send(`{"type":1,"invocationId":"1","target":"Add","arguments":[1,2]}${RS}`);
        const reply = await c.next();
        assert.equal(reply.binary, false);
        assert.deepEqual(json(reply), [{ type: 3, invocationId: '1', result: 3 }]);
      } else {
        c.send(writeBinaryMessage(encode([1, {}, '1', 'Add', [1, 2]])));
        const reply = await c.next();
        assert.equal(reply.binary, true);
        assert.deepEqual(mp(reply), [[3, {}, '1', 3, 3]]);
      }
      c.ws.close();
    });
  }

  const refused: [string, string, string][] = [
    ['a version past the newest, quoting the name as sent', `{"protocol":"Json","version":3}`, "The server does not support version 3 of the 'Json' protocol."],
    ['a name that only Unicode case folding would match', `{"protocol":"messagepac\u212A","version":1}`, "The protocol 'messagepac\u212A' is not supported."],
    ['a version that is no Int32', `{"protocol":"json","version":2147483648}`, 'An unexpected error occurred during connection handshake.'],
  ];
  for (const [name, request, error] of refused) {
    it(`refuses ${name}`, async () => {
      const c = await RawClient.connect(hub.url);
      c.send(`${request}${RS}`);
      assert.deepEqual(json(await c.next()), [{ error }]);
      await withTimeout(c.closed, 3000, 'socket close');
    });
  }
});
