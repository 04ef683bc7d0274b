// Bad input at the service's hub, each with its stated outcome (docs/protocol.md, "Hub methods and events"): invalid
// Base64, unknown session and a sender that has not joined get `Error`; JoinSession with an invalid,
// expired or other device's token gets `Error` and no membership; an oversized message, garbage and
// truncated messages close the connection with an error while the service keeps serving everyone else.
import { decode, encode } from '@msgpack/msgpack';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { before, describe, it } from 'node:test';
import { splitBinaryMessages, writeBinaryMessage } from '../../src/hub/binary-format.js';
import { RawClient, type RawFrame } from '../hub/helpers.js';
import { call } from '../support/http.js';
import { adminToken, registerDevice, tokenServiceFor } from '../support/tokens.js';
import { HUB_VARIANTS, HubEvents, audioArg, connectHub, joinedClient, startSession, startVoiceRig, variantName, type VoiceRig } from '../support/voice.js';
import { speechPackets } from '../voice/helpers.js';
import { withTimeout } from '../support/wait.js';

const RS = '\u001e';
const CLOSED_WITH_ERROR = 'Server returned an error on close: Connection closed with an error.';
const packet = speechPackets()[0]!;

/** The device generation a token was issued for (its `gen` claim). */
const generationOf = (token: string): number => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).gen;

describe('bad input at the hub', () => {
  let rig: VoiceRig;
  before(async () => {
    rig = await startVoiceRig();
  });

  /** A device with an active session, and a member of it streaming nothing yet. */
  async function session() {
    const device = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, device.id, device.token);
    const member = await joinedClient(rig.svc, sessionId, device.token);
    return { device, sessionId, member };
  }

  for (const variant of HUB_VARIANTS) {
    it(`${variantName(variant)}: invalid Base64, unknown session and a sender that has not joined each get Error`, async () => {
      const { sessionId, member } = await session();
      const c = await connectHub(rig.svc, variant);
      const events = new HubEvents(c);
      await c.invoke('SendAudioData', sessionId, audioArg(packet, variant.protocol));
      await c.invoke('SendAudioData', 'no-such-session', audioArg(packet, variant.protocol));
      await member.connection.invoke('SendAudioData', sessionId, 'not base64!');
      await member.connection.invoke('SendAudioData', sessionId, 'QUJD=');
      assert.deepEqual(await events.waitFor('Error', 2), [
        `join session '${sessionId}' before sending audio to it`,
        "session 'no-such-session' does not exist",
      ]);
      assert.deepEqual(await member.events.waitFor('Error', 2), ['audioDataBase64 is not valid Base64', 'audioDataBase64 is not valid Base64']);
      assert.deepEqual(member.events.of('AudioProcessed'), [], 'nothing was forwarded');
      assert.deepEqual(events.of('AudioProcessed'), []);
      assert.equal(rig.svc.app.sessions.get(sessionId)?.audioPacketsSent, 0);
    });
  }

  it('JoinSession with an invalid, forged, expired, revoked or other device\'s token: Error and no membership', async () => {
    const { device, sessionId, member } = await session();
    const other = await registerDevice(rig.svc);
    const expired = (await tokenServiceFor(rig.svc, () => Date.now() - 2 * 3_600_000).issueDevice(device.id, generationOf(device.token), 3_600_000)).token;
    const forged = await new SignJWT({ role: 'device', gen: generationOf(device.token) })
      .setProtectedHeader({ alg: 'HS256' }).setSubject(device.id).setIssuedAt().setExpirationTime('1h')
      .sign(new TextEncoder().encode('not the service signing key, but long enough'));
    // A token of a device that has since been deleted (its tokens are revoked).
    const gone = await registerDevice(rig.svc);
    assert.equal((await call(rig.svc.url, 'DELETE', `/api/device/${gone.id}`, { token: await adminToken(rig.svc) })).status, 200);
    const cases: [string, string, string][] = [
      ['garbage', 'not-a-token', 'Invalid device token: The token is invalid.'],
      ['forged', forged, 'Invalid device token: The token is invalid.'],
      ['expired', expired, 'Invalid device token: The token expired.'],
      ['revoked', gone.token, 'Invalid device token: The token has been revoked.'],
      ['other device', other.token, `Invalid device token: it does not belong to the device of session '${sessionId}'`],
    ];
    const outsiders: HubEvents[] = [];
    for (const [name, token, text] of cases) {
      const events = new HubEvents(await connectHub(rig.svc, { protocol: name === 'expired' ? 'messagepack' : 'json' }));
      outsiders.push(events);
      await events.connection.invoke('JoinSession', sessionId, token);
      const [error] = await events.waitFor('Error');
      assert.equal(error, text, name);
      assert.deepEqual(events.of('SessionJoined'), [], `${name}: no SessionJoined`);
      // No membership: its own audio is refused as from a non-member ...
      await events.connection.invoke('SendAudioData', sessionId, audioArg(packet));
      assert.deepEqual((await events.waitFor('Error', 2))[1], `join session '${sessionId}' before sending audio to it`, name);
    }
    // ... and the group's traffic does not reach it.
    await member.connection.invoke('SendAudioData', sessionId, audioArg(packet));
    await member.events.waitFor('AudioResponse');
    await member.events.waitFor('AudioData');
    for (const events of outsiders) {
      await events.connection.invoke('JoinSession', 'no-such-session', 'x'); // a round trip: anything queued for it has arrived
      assert.deepEqual(events.events.filter((e) => e.name !== 'Error').map((e) => e.name), []);
    }
    assert.equal(rig.svc.app.sessions.get(sessionId)?.audioPacketsSent, 1);
  });

  it('JoinSession for an unknown session, or a stopped one, gets Error', async () => {
    const { device, sessionId, member } = await session();
    await withTimeout(member.connection.invoke('JoinSession', 'no-such-session', device.token), 5000, 'join');
    assert.deepEqual(await member.events.waitFor('Error'), ["session 'no-such-session' does not exist"]);
    const c = await connectHub(rig.svc);
    const events = new HubEvents(c);
    await rig.svc.app.sessions.stop(sessionId);
    await c.invoke('JoinSession', sessionId, device.token);
    assert.deepEqual(await events.waitFor('Error'), [`session '${sessionId}' is Stopped`]);
    assert.deepEqual(events.of('SessionJoined'), []);
  });

  for (const variant of HUB_VARIANTS) {
    it(`${variantName(variant)}: a message over Hub.MaximumReceiveMessageSize closes the connection with an error`, async () => {
      const { device, sessionId, member } = await session();
      const c = await connectHub(rig.svc, variant);
      const events = new HubEvents(c);
      await c.invoke('JoinSession', sessionId, device.token);
      // 70,000 Base64 characters: one message over the 65,536-byte default, whatever the framing.
      await assert.rejects(c.invoke('SendAudioData', sessionId, 'A'.repeat(70_000)));
      assert.equal((await events.waitClosed())?.message, CLOSED_WITH_ERROR);
      // The session and its other member carry on.
      await member.connection.invoke('SendAudioData', sessionId, audioArg(packet));
      assert.equal((await member.events.waitFor('AudioResponse')).length, 1);
    });
  }
});

const jsonMessages = (frame: RawFrame): unknown[] => frame.data.toString('utf8').split(RS).filter(Boolean).map((s) => JSON.parse(s));
const mpMessages = (frame: RawFrame): unknown[] => splitBinaryMessages(frame.data, 1 << 30).messages.map((m) => decode(m));


describe('garbage and truncated messages from a raw WebSocket client', () => {
  let rig: VoiceRig;
  before(async () => {
    rig = await startVoiceRig();
  });

  const invocation = (sessionId: string): Record<string, unknown> => ({ type: 1, target: 'SendAudioData', arguments: [sessionId, packet.toString('base64')] });
  const cases: [string, 'json' | 'messagepack', (sessionId: string) => string | Uint8Array][] = [
    ['JSON that does not parse', 'json', () => `not json${RS}`],
    ['a truncated JSON message (cut off, then the separator)', 'json', (id) => `${JSON.stringify(invocation(id)).slice(0, 40)}${RS}`],
    ['an Invocation without arguments', 'json', () => `{"type":1,"target":"SendAudioData"}${RS}`],
    ['undecodable MessagePack', 'messagepack', () => writeBinaryMessage(Uint8Array.from([0xc1, 0xc1]))],
    // Cut in the target, which the reader reads: the message is broken. Cut in the arguments, it is that
    // invocation's binding failure, as ASP.NET binds them (the case after these).
    ['a truncated MessagePack message (length prefix over the cut body)', 'messagepack', (id) => writeBinaryMessage(encode([1, {}, null, 'SendAudioData', [id, packet]]).subarray(0, 10))],
    ['a MessagePack length prefix over the size limit', 'messagepack', () => Uint8Array.from([0x80, 0x80, 0x10])],
  ];
  for (const [name, protocol, frame] of cases) {
    it(`${protocol}: ${name} closes that connection with an error; others keep streaming`, async () => {
      const device = await registerDevice(rig.svc);
      const { sessionId } = await startSession(rig.svc, device.id, device.token);
      const bystander = await joinedClient(rig.svc, sessionId, device.token, { protocol: protocol === 'json' ? 'messagepack' : 'json' });
      const raw = await RawClient.connect(`${rig.svc.url}/voice-hub`);
      assert.equal((await raw.handshake(protocol)).data.toString(), `{}${RS}`);
      const data = frame(sessionId);
      raw.send(data, typeof data !== 'string');
      const frames = await raw.untilClosed();
      const last = frames.at(-1);
      assert.ok(last, 'a Close message before the socket closed');
      const close = (protocol === 'json' ? jsonMessages(last) : mpMessages(last)).at(-1);
      assert.deepEqual(close, protocol === 'json' ? { type: 7, error: 'Connection closed with an error.', allowReconnect: true } : [7, 'Connection closed with an error.', true]);
      await bystander.connection.invoke('SendAudioData', sessionId, audioArg(packet, protocol === 'json' ? 'messagepack' : 'json'));
      assert.equal((await bystander.events.waitFor('AudioResponse')).length, 1);
      assert.equal(rig.svc.app.sessions.get(sessionId)?.audioPacketsSent, 1, 'the garbage forwarded nothing');
    });
  }

  it('messagepack: an invocation cut off in its arguments fails that invocation; the connection stays and forwards nothing', async () => {
    const device = await registerDevice(rig.svc);
    const { sessionId } = await startSession(rig.svc, device.id, device.token);
    const raw = await RawClient.connect(`${rig.svc.url}/voice-hub`);
    await raw.handshake('messagepack');
    raw.send(writeBinaryMessage(encode([1, {}, 'cut', 'SendAudioData', [sessionId, packet]]).subarray(0, 40)), true);
    const messages = mpMessages(await raw.next());
    assert.deepEqual(messages, [[3, {}, 'cut', 1, "Failed to invoke 'SendAudioData' due to an error on the server."]]);
    raw.send(writeBinaryMessage(encode([6])), true);
    raw.ws.close();
    await raw.untilClosed();
    assert.equal(rig.svc.app.sessions.get(sessionId)?.audioPacketsSent, 0, 'the cut message forwarded nothing');
  });

  // The transport is a byte stream, as in ASP.NET: a message cut across WebSocket frames is kept until its
  // end arrives, then dispatched; it is not an error.
  for (const protocol of ['json', 'messagepack'] as const) {
    it(`${protocol}: a message split over two frames is reassembled and dispatched`, async () => {
      const device = await registerDevice(rig.svc);
      const { sessionId } = await startSession(rig.svc, device.id, device.token);
      const raw = await RawClient.connect(`${rig.svc.url}/voice-hub`);
      await raw.handshake(protocol);
      const join = { type: 1, invocationId: '1', target: 'JoinSession', arguments: [sessionId, device.token] };
      const bytes = protocol === 'json'
        ? Buffer.from(`${JSON.stringify(join)}${RS}`)
        : Buffer.from(writeBinaryMessage(encode([1, {}, '1', 'JoinSession', [sessionId, device.token]])));
      raw.send(protocol === 'json' ? bytes.subarray(0, 25).toString() : bytes.subarray(0, 25), protocol !== 'json');
      raw.send(protocol === 'json' ? bytes.subarray(25).toString() : bytes.subarray(25), protocol !== 'json');
      const frame = await raw.next();
      const messages = protocol === 'json' ? jsonMessages(frame) : mpMessages(frame);
      assert.deepEqual(messages[0], protocol === 'json'
        ? { type: 1, target: 'SessionJoined', arguments: [sessionId] }
        : [1, {}, null, 'SessionJoined', [sessionId], []]); // six items, the stream ids empty, as ASP.NET Core writes
      raw.ws.close();
    });
  }
});
