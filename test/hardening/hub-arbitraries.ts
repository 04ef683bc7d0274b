// fast-check generators for hostile SignalR traffic after a valid handshake: every message type with
// wrong types in every field, valid messages with garbage after them, deep nesting, huge and
// over-long varints, truncated messages, many messages per frame, messages split across frames.
import { encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { wrongType } from './http-arbitraries.js';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';

export interface HubTargets {
  /** A live session and its device's token, so some invocations reach the voice code for real. */
  readonly sessionId: string;
  readonly token: string;
  readonly audio: Uint8Array;
}

const maybe = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | unknown> =>
  fc.oneof({ weight: 4, arbitrary: arb }, { weight: 1, arbitrary: wrongType });

const target = fc.constantFrom('JoinSession', 'SendAudioData', 'joinsession', 'SENDAUDIODATA', 'Nope', '', 'constructor', '__proto__', 'toString');

function args(t: HubTargets, binary: boolean): fc.Arbitrary<unknown[]> {
  const session = fc.oneof({ weight: 3, arbitrary: fc.constant(t.sessionId) }, { weight: 1, arbitrary: wrongType });
  const audio = fc.oneof(
    fc.constant(binary ? t.audio : Buffer.from(t.audio).toString('base64')),
    fc.uint8Array({ maxLength: 3000 }).map((b) => (binary ? b : Buffer.from(b).toString('base64'))),
    fc.constantFrom('', '====', 'not base64!', 'AAAA'.repeat(2000)),
    wrongType,
  );
  return fc.oneof(
    fc.tuple(session, fc.oneof({ weight: 3, arbitrary: fc.constant(t.token) }, { weight: 1, arbitrary: wrongType })),
    fc.tuple(session, audio),
    fc.array(fc.oneof(wrongType, session, audio), { maxLength: 4 }),
  );
}

/** A message object with the JSON protocol's field names; any field may be missing or mistyped. */
export function jsonMessage(t: HubTargets): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({
    type: fc.oneof({ weight: 6, arbitrary: fc.constant(1) }, { weight: 3, arbitrary: fc.constantFrom(2, 3, 4, 5, 6, 7, 8, 9, 0, 10, -1, 1.5, '1', null, 1e308) }),
    invocationId: maybe(fc.stringMatching(/^[0-9]{1,4}$/)),
    target: maybe(target),
    arguments: maybe(args(t, false)),
    headers: maybe(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 })),
    streamIds: maybe(fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 })),
    error: maybe(fc.string({ maxLength: 20 })),
    result: wrongType,
    item: wrongType,
    allowReconnect: maybe(fc.boolean()),
    sequenceId: maybe(fc.integer()),
  }, { requiredKeys: ['type'] });
}

/** A MessagePack hub message as its item array: the right shape mostly, any item mistyped, any length. */
export function msgpackItems(t: HubTargets): fc.Arbitrary<unknown[]> {
  const invocation = fc.tuple(
    fc.oneof({ weight: 6, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constant(4) }),
    maybe(fc.constant({})), maybe(fc.oneof(fc.constant(null), fc.stringMatching(/^[0-9]{1,4}$/))), maybe(target), maybe(args(t, true)),
  ).map((items) => [...items] as unknown[]);
  const other = fc.tuple(fc.constantFrom(2, 3, 5, 6, 7, 8, 9, 0, 11, -1, 2 ** 40, 1.5, 'x', null), fc.array(wrongType, { maxLength: 5 }))
    .map(([type, rest]) => [type, ...rest]);
  return fc.tuple(fc.oneof({ weight: 3, arbitrary: invocation }, { weight: 2, arbitrary: other }), fc.nat({ max: 7 }))
    .map(([items, cut]) => (cut === 0 ? items.slice(0, Math.max(1, items.length - 1)) : items));
}

const SEP = '\u001e';

/** JSON: `[` nested `depth` times inside an invocation's arguments. */
const deepJson = (depth: number): string => `{"type":1,"invocationId":"9","target":"JoinSession","arguments":${'['.repeat(depth)}${']'.repeat(depth)}}${SEP}`;

/** MessagePack: fixarray-of-one nested `depth` times, length-prefixed. */
function deepMsgpack(depth: number): Uint8Array {
  const head = encode([1, {}, '9', 'JoinSession']);
  // Rewrite the fixarray header from 4 to 5 items and append the nested argument.
  return writeBinaryMessage(Uint8Array.from([0x95, ...head.subarray(1), ...new Array<number>(depth).fill(0x91), 0xc0]));
}

const bytes = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** One piece of a JSON-protocol stream. */
export function jsonPiece(t: HubTargets): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    { weight: 8, arbitrary: jsonMessage(t).map((m) => bytes(JSON.stringify(m) + SEP)) },
    { weight: 2, arbitrary: jsonMessage(t).chain((m) => {
      const text = JSON.stringify(m) + SEP;
      return fc.nat({ max: text.length - 1 }).map((n) => bytes(text.slice(0, n)));
    }) },
    { weight: 2, arbitrary: fc.tuple(jsonMessage(t), fc.string({ maxLength: 30 })).map(([m, g]) => bytes(JSON.stringify(m) + SEP + g)) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => bytes((JSON.stringify(v) ?? 'null') + SEP)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Uint8Array.from([...b, 0x1e])) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 32_000 }).map((n) => bytes(deepJson(n))) },
    { weight: 1, arbitrary: fc.constantFrom(
      bytes(`{"type":6}${SEP}`.repeat(2000)),
      bytes(`{"type":1,"target":"Nope","arguments":[]}${SEP}`.repeat(1100)),
      bytes(`{"type":1,"target":"JoinSession","arguments":["${'x'.repeat(70_000)}"]}${SEP}`),
      bytes('x'.repeat(70_000)),
      bytes(`{"type":7,"error":"bye"}${SEP}`),
      Uint8Array.from([0xff, 0xfe, 0x1e]),
      bytes(SEP.repeat(50)),
    ) },
  );
}

/** One piece of a MessagePack-protocol stream. */
export function msgpackPiece(t: HubTargets): fc.Arbitrary<Uint8Array> {
  const framed = (items: unknown): Uint8Array => writeBinaryMessage(encode(items, { ignoreUndefined: true }));
  const nope = [...framed([1, {}, null, 'Nope', []])];
  return fc.oneof(
    { weight: 8, arbitrary: msgpackItems(t).map(framed) },
    { weight: 2, arbitrary: msgpackItems(t).chain((items) => {
      const full = framed(items);
      return fc.nat({ max: full.length - 1 }).map((n) => full.subarray(0, n));
    }) },
    { weight: 2, arbitrary: fc.tuple(msgpackItems(t), fc.uint8Array({ maxLength: 30 })).map(([items, g]) => Uint8Array.from([...framed(items), ...g])) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 200 }).map(writeBinaryMessage) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(framed) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 60_000 }).map(deepMsgpack) },
    { weight: 1, arbitrary: fc.constantFrom(
      Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f]), // 2^32 - 1: over 2 GB
      Uint8Array.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), // six bytes
      Uint8Array.from([0xff, 0xff, 0xff, 0x07]), // 16 MiB, over the message limit
      Uint8Array.from([0x80, 0x80, 0x04]), // exactly 65536
      Uint8Array.from([0xf0, 0xff, 0x03, 0x91]), // 65520 announced, 1 sent
      Uint8Array.from([0x05, 0xdf, 0xff, 0xff, 0xff, 0xff]), // map of 2^32-1 entries, truncated
      Uint8Array.from([0x03, 0x91, 0xc1, 0xc1]), // 0xc1: never used in MessagePack
      Uint8Array.from([0x06, 0x92, 0xd6, 0xff, 0, 0, 0]), // timestamp ext, truncated
      Uint8Array.from(new Array<number[]>(3000).fill([0x02, 0x91, 0x06]).flat()), // 3000 pings in one frame
      Uint8Array.from(new Array<number[]>(1100).fill(nope).flat()), // more invocations than may queue
      Uint8Array.from([0x00]),
    ) },
  );
}

/** Pieces grouped into frames; some frames cut in two so a message spans frames. */
export function frames(piece: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array[]> {
  return fc.array(fc.tuple(piece, fc.boolean(), fc.option(fc.nat())), { minLength: 1, maxLength: 12 }).map((parts) => {
    const out: Uint8Array[] = [];
    let current: number[] = [];
    for (const [p, startsFrame, cut] of parts) {
      if (startsFrame && current.length > 0) {
        out.push(Uint8Array.from(current));
        current = [];
      }
      current.push(...p);
      if (cut !== null && current.length > 1) {
        const at = 1 + (cut % (current.length - 1));
        out.push(Uint8Array.from(current.slice(0, at)));
        current = current.slice(at);
      }
    }
    if (current.length > 0) out.push(Uint8Array.from(current));
    return out;
  });
}

/** Handshake requests: right and wrong protocols and versions, garbage, no separator, too long. */
export const handshake: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.record({
    protocol: maybe(fc.constantFrom('json', 'messagepack', 'JSON', 'blazorpack', '')),
    version: maybe(fc.constantFrom(0, 1, 2, 3, -1, 1.5, 2 ** 53)),
  }, { requiredKeys: [] }).chain((o) => fc.string({ maxLength: 40 }).map((tail) => bytes(JSON.stringify(o) + SEP + tail))),
  fc.uint8Array({ maxLength: 100 }),
  fc.string({ maxLength: 100 }).map((s) => bytes(s + SEP)),
  fc.constantFrom(bytes(`{"protocol":"json","version":1}`), bytes('{'.repeat(70_000)), bytes(`${SEP}`), bytes(`[]${SEP}`), Uint8Array.from([0xff, 0x1e])),
);

const queryValue = fc.oneof(fc.string({ maxLength: 30 }).map(encodeURIComponent), fc.stringMatching(/^[A-Za-z0-9%._~=&+-]{0,30}$/));

/** Raw negotiate and WebSocket upgrade requests: any method, query, key, version, origin, token. */
export function upgradeRequest(t: HubTargets): fc.Arbitrary<string> {
  return fc.record({
    negotiate: fc.boolean(),
    method: fc.constantFrom('GET', 'GET', 'POST', 'OPTIONS', 'PUT'),
    id: fc.option(queryValue),
    accessToken: fc.option(fc.oneof(fc.constant(t.token), queryValue)),
    negotiateVersion: fc.option(fc.constantFrom('0', '1', '2', '-1', 'x', '99999999999999999999', '')),
    key: fc.option(fc.oneof(
      fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString('base64')),
      fc.string({ maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)),
      fc.constantFrom('', 'x'.repeat(300)),
    )),
    version: fc.option(fc.constantFrom('13', '8', '', 'abc', '13, 8')),
    origin: fc.option(fc.oneof(fc.constantFrom('http://127.0.0.1', 'null', 'http://evil.example', 'file://', 'http://[::1]:99999'), fc.string({ maxLength: 30 }).filter((s) => !/[\r\n]/.test(s)))),
    extensions: fc.option(fc.constantFrom('permessage-deflate', 'permessage-deflate; client_max_window_bits=99', 'x-custom; a=b', ';;;')),
    authorization: fc.option(fc.oneof(fc.constant(`Bearer ${t.token}`), fc.string({ maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)))),
  }).map((r) => {
    const query = [
      r.id !== null ? `id=${r.id}` : '',
      r.accessToken !== null ? `access_token=${r.accessToken}` : '',
      r.negotiateVersion !== null ? `negotiateVersion=${r.negotiateVersion}` : '',
    ].filter(Boolean).join('&');
    const head = [`${r.method} /voice-hub${r.negotiate ? '/negotiate' : ''}${query ? `?${query}` : ''} HTTP/1.1`, 'Host: 127.0.0.1'];
    if (r.negotiate) head.push('Connection: close', 'Content-Length: 0');
    else head.push('Upgrade: websocket', 'Connection: Upgrade');
    if (r.key !== null) head.push(`Sec-WebSocket-Key: ${r.key}`);
    if (r.version !== null) head.push(`Sec-WebSocket-Version: ${r.version}`);
    if (r.origin !== null) head.push(`Origin: ${r.origin}`);
    if (r.extensions !== null) head.push(`Sec-WebSocket-Extensions: ${r.extensions}`);
    if (r.authorization !== null) head.push(`Authorization: ${r.authorization}`);
    return head.join('\r\n') + '\r\n\r\n';
  });
}
