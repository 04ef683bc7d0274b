// Hub messages that are small (under the 64 KiB message limit) but shaped to make per-message work
// grow faster than their size: thousands of names in one object (the duplicate-name check compared
// each with every earlier one: 370 ms a message), one name thousands of times, a MessagePack argument
// 32,000 levels deep around thousands of ill-formed strings (a path was built to each: 13 s and 2.3 GB
// for one message), thousands of items after those a message has (each decoded on its own when one did
// not decode). Sent by a client that never authenticated, within its message budget. Each shape gets
// its exact answer (a completion or a close naming the error), and the service's CPU time per message
// is bounded at 150 ms, where such a message costs 1-15 ms here (up to 50 ms on a loaded machine): the
// bound catches the class (work that grows with the square of a count, or with depth times count), not
// a speed.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { encode } from '@msgpack/msgpack';
import { assertHealthyProcess, startDaemon, type Daemon } from './daemon.js';
import { HubWire, type Protocol, type WireMessage } from './hub-wire.js';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { messageCost } from '../../src/message-cost.js';
import { schemaDefaults } from '../../src/config/schema-keys.js';
import { withTimeout } from '../support/wait.js';

const CPU_MS_PER_MESSAGE = 150;
const MESSAGE_LIMIT = 65_536;
/** Copies of each shape sent on one connection: as many as the unauthenticated burst pays for at the message limit (4). */
const COPIES = Math.floor((schemaDefaults() as { Hub: { UnauthenticatedMessageBurst: number } }).Hub.UnauthenticatedMessageBurst / messageCost(MESSAGE_LIMIT));

let daemon: Daemon;
before(async () => {
  // Every shape is sent from this one address at the connection's full burst: eleven of them pass the
  // budget the address's connections share (what a flood of them is refused by, test/hub/address-budget)
  // whenever they run faster than it refills. Each connection's own budget still applies.
  daemon = await startDaemon({ settings: { Hub: { UnauthenticatedAddressMessageBurst: 0 } } });
});
after(() => daemon?.stop());

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const UNKNOWN = (target: string): string => `Failed to invoke '${target}' due to an error on the server. HubException: Method does not exist.`;
const UNBOUND = (target: string): string => `Failed to invoke '${target}' due to an error on the server.`;
/** A completion without error: the method ran and told the caller through the `Error` event. */
const REPORTED = '(no error)';

type Outcome = { completion: string } | { close: string };

interface Shape {
  readonly name: string;
  readonly protocol: Protocol;
  /** The message with invocation id `id`, as sent (a JSON record or a MessagePack frame). */
  readonly frame: (id: string) => string | Uint8Array;
  readonly outcome: Outcome;
}

const names = (n: number, value = '0'): string => Array.from({ length: n }, (_, i) => `"k${i}":${value}`).join(',');
const repeated = (n: number, name: string, value: string): string => Array.from({ length: n }, () => `"${name}":${value}`).join(',');
const json = (text: string): string => `${text}\u001e`;
/** A MessagePack str of the CESU-8 bytes of U+D800: a lone surrogate once decoded. */
const LONE_SURROGATE_STR = Buffer.from([0xa3, 0xed, 0xa0, 0x80]);
/** An Invocation frame whose arguments are `argsBytes` (already MessagePack). */
function msgpackInvocation(id: string, target: string, argsBytes: Uint8Array, extraItems: Uint8Array[] = []): Uint8Array {
  const head = encode([1, {}, id, target]);
  const count = 5 + extraItems.length;
  // Replace the fixarray(4) header with an array header for all the items.
  const header = count < 16 ? Buffer.from([0x90 | count]) : count < 65536 ? Buffer.from([0xdc, count >> 8, count & 0xff]) : Buffer.from([0xdd, 0, count >> 16, (count >> 8) & 0xff, count & 0xff]);
  return writeBinaryMessage(Buffer.concat([header, head.subarray(1), argsBytes, ...extraItems]));
}
/** `depth` nested one-item arrays around `inner`. */
const nested = (depth: number, inner: Uint8Array): Buffer => Buffer.concat([Buffer.alloc(depth, 0x91), inner]);
/** An array of `n` copies of `item`. */
const arrayOf = (n: number, item: Uint8Array): Buffer =>
  Buffer.concat([n < 16 ? Buffer.from([0x90 | n]) : Buffer.from([0xdc, n >> 8, n & 0xff]), ...Array.from({ length: n }, () => item)]);

const SHAPES: Shape[] = [
  { name: 'JSON: 6,000 distinct top-level names', protocol: 'json', outcome: { completion: UNKNOWN('Nope') },
    frame: (id) => json(`{"type":1,"invocationId":"${id}","target":"Nope","arguments":[],${names(6000)}}`) },
  { name: 'JSON: one unknown name 9,000 times', protocol: 'json', outcome: { completion: UNKNOWN('Nope') },
    frame: (id) => json(`{"type":1,"invocationId":"${id}","target":"Nope","arguments":[],${repeated(9000, 'x', '0')}}`) },
  { name: 'JSON: "target" 4,000 times', protocol: 'json', outcome: { completion: UNKNOWN('Nope') },
    frame: (id) => json(`{"type":1,"invocationId":"${id}",${repeated(4000, 'target', '"Nope"')},"arguments":[]}`) },
  // SendAudioData binds any value as its audio and reports a bad one as the Error event (completing without error).
  { name: 'JSON: 6,000 names in an argument', protocol: 'json', outcome: { completion: REPORTED },
    frame: (id) => json(`{"type":1,"invocationId":"${id}","target":"SendAudioData","arguments":["s",{${names(6000)}}]}`) },
  { name: 'JSON: 6,000 ill-formed strings 60 levels deep', protocol: 'json', outcome: { completion: UNBOUND('SendAudioData') },
    frame: (id) => json(`{"type":1,"invocationId":"${id}","target":"SendAudioData","arguments":["s",${'['.repeat(60)}${Array.from({ length: 6000 }, () => '"\\ud800"').join(',')}${']'.repeat(60)}]}`) },
  { name: 'JSON: 30,000 levels of arrays', protocol: 'json', outcome: { close: 'Connection closed with an error.' },
    frame: (id) => json(`{"type":1,"invocationId":"${id}","target":"SendAudioData","arguments":["s",${'['.repeat(30000)}${']'.repeat(30000)}]}`) },
  { name: 'MessagePack: 6,000 names in an argument', protocol: 'messagepack', outcome: { completion: REPORTED },
    frame: (id) => msgpackInvocation(id, 'SendAudioData', encode(['s', Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`k${i}`, 0]))])) },
  { name: 'MessagePack: 8,000 ill-formed strings 30,000 levels deep', protocol: 'messagepack', outcome: { completion: UNBOUND('SendAudioData') },
    frame: (id) => msgpackInvocation(id, 'SendAudioData', Buffer.concat([Buffer.from([0x92, 0xa1, 0x73]), nested(30_000, arrayOf(8000, LONE_SURROGATE_STR))])) },
  { name: 'MessagePack: 60,000 levels of arrays in an argument', protocol: 'messagepack', outcome: { completion: UNBOUND('SendAudioData') },
    frame: (id) => msgpackInvocation(id, 'SendAudioData', Buffer.concat([Buffer.from([0x92, 0xa1, 0x73]), nested(60_000, Buffer.from([0x90]))])) },
  { name: 'MessagePack: 12,000 ill-formed strings 400 levels deep', protocol: 'messagepack', outcome: { completion: UNBOUND('SendAudioData') },
    frame: (id) => msgpackInvocation(id, 'SendAudioData', Buffer.concat([Buffer.from([0x92, 0xa1, 0x73]), nested(400, arrayOf(12_000, LONE_SURROGATE_STR))])) },
  { name: 'MessagePack: 30,000 items after the arguments, one that does not decode', protocol: 'messagepack', outcome: { completion: UNKNOWN('Nope') },
    // A map whose key is an array: MessagePack allows it, the decoder refuses it; ASP.NET never reads the item.
    frame: (id) => msgpackInvocation(id, 'Nope', encode([]), [encode([]), ...Array.from({ length: 30_000 }, (_, i) => (i === 5 ? Buffer.from([0x81, 0x90, 0x00]) : Buffer.from([0x00])))]) },
];

async function outcomes(shape: Shape): Promise<{ seen: Outcome[]; cpu: number }> {
  const wire = await HubWire.connect(daemon.url, shape.protocol);
  const frames = Array.from({ length: COPIES }, (_, i) => shape.frame(String(i + 1)));
  for (const f of frames) assert.ok((typeof f === 'string' ? Buffer.byteLength(f) : f.length) <= MESSAGE_LIMIT, `${shape.name}: ${typeof f === 'string' ? Buffer.byteLength(f) : f.length} bytes`);
  const before = cpuMs(daemon.pid);
  for (const f of frames) wire.sendRaw(f);
  const done = (m: WireMessage[]): boolean => m.filter((x) => x.type === 3).length >= COPIES || m.some((x) => x.type === 7);
  await withTimeout((async () => {
    while (!done(wire.messages) && wire.open) await new Promise((r) => setTimeout(r, 20));
  })(), 120_000, `answers to ${shape.name}`);
  const cpu = cpuMs(daemon.pid) - before;
  const seen: Outcome[] = wire.messages.flatMap((m): Outcome[] => (m.type === 3 ? [{ completion: m.error ?? '(no error)' }] : m.type === 7 ? [{ close: m.error ?? '(no error)' }] : []));
  wire.close();
  return { seen, cpu };
}

describe('hub messages shaped to make work grow faster than their size', () => {
  for (const shape of SHAPES) {
    it(`${shape.name}: ${'completion' in shape.outcome ? 'the invocation fails as it should' : 'the connection is closed with its error'}, at a bounded cost`, async () => {
      const { seen, cpu } = await outcomes(shape);
      const expected = 'completion' in shape.outcome ? Array.from({ length: COPIES }, () => shape.outcome) : [shape.outcome];
      assert.deepEqual(seen, expected);
      const messages = 'completion' in shape.outcome ? COPIES : 1;
      assert.ok(cpu / messages < CPU_MS_PER_MESSAGE, `${cpu} ms of the service's CPU for ${messages} message(s) (bound ${CPU_MS_PER_MESSAGE} ms each)`);
      assertHealthyProcess(daemon);
    });
  }
});
