// The voice hub methods' error boundary, over a real hub on a loopback port with the official SignalR
// client in both protocols: a coded domain error reaches the device as its own text; a bug (here a
// TypeError from a dependency) reaches it only as a generic text with a trace id, and the log has the
// same trace id with the stack. The method still completes (with null): devices learn of failures
// through `Error` events.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { voiceHubMethods } from '../../src/api/hub-methods.js';
import { TokenService } from '../../src/auth/tokens.js';
import { tokenVerifier } from '../../src/auth/verify.js';
import { createLogger } from '../../src/log/logger.js';
import type { SessionRecord } from '../../src/store/types.js';
import { connectClient, startHub, type TestHub } from '../hub/helpers.js';
import { waitUntil, withTimeout } from '../support/wait.js';

const TRACE = /^An unexpected error occurred on the server \(trace id (00-[0-9a-f]{32}-[0-9a-f]{16}-00)\)\.$/;

const active = { id: 's1', deviceId: 'd1', state: 'Active' } as SessionRecord;
// Every line the methods log, for the trace-id checks.
const logLines: string[] = [];
const tokens = new TokenService(randomBytes(32));
let hub: TestHub;
let deviceToken: string;

before(async () => {
  deviceToken = (await tokens.issueDevice('d1', 1, 60_000)).token;
  hub = await startHub({
    methods: voiceHubMethods({
      verifyToken: tokenVerifier(tokens, () => true),
      getSession: (id) => {
        if (id === 'buggy') {
          // A real bug in a dependency: reading a property of a missing record.
          const records = new Map<string, SessionRecord>();
          return { ...active, state: records.get(id)!.state };
        }
        return id === active.id ? active : undefined;
      },
      joined: () => undefined,
      sendAudio: (_id, opus) => {
        // Another real bug, on the audio path: the packet has no `frames`.
        return (opus as unknown as { frames: { count: number } }).frames.count as never;
      },
      logger: createLogger({ levels: { Default: 'Debug' }, write: (line) => logLines.push(line), timestamps: false }, 'Hub'),
    }),
  });
});

after(() => hub.stop());

for (const protocol of ['json', 'messagepack'] as const) {
  describe(`hub method errors (${protocol})`, () => {
    /** Invokes a method and returns its completion result and the `Error` events it caused. */
    async function invoke(method: string, ...args: unknown[]): Promise<{ result: unknown; errors: string[]; joined: string[] }> {
      const client = await connectClient(hub.url, { protocol, skipNegotiation: true });
      const errors: string[] = [];
      const joined: string[] = [];
      client.on('Error', (text: string) => errors.push(text));
      client.on('SessionJoined', (id: string) => joined.push(id));
      try {
        const result = await withTimeout(client.invoke(method, ...args), 5000, method);
        await waitUntil(() => errors.length + joined.length > 0, `${method}'s reply`, 5000);
        return { result, errors, joined };
      } finally {
        await client.stop();
      }
    }

    it('a bug in JoinSession reaches the device as a generic text with a trace id, logged with its stack', async () => {
      const { result, errors } = await invoke('JoinSession', 'buggy', deviceToken);
      assert.equal(result, null);
      assert.equal(errors.length, 1);
      const traceId = TRACE.exec(errors[0]!)?.[1];
      assert.ok(traceId, `not the generic text: ${errors[0]}`);
      assert.doesNotMatch(errors[0]!, /TypeError|Cannot read|undefined/);
      const logged = logLines.filter((l) => l.includes(traceId));
      assert.equal(logged.length, 1);
      // One line (the logger joins the stack's lines), at the error level, with the stack.
      assert.match(logged[0]!, /^fail: Hub: 'JoinSession' from \S+ failed \(trace id 00-[0-9a-f-]+\): TypeError: Cannot read properties of undefined \(reading 'state'\)\s+at /);
    });

    it('a bug on the audio path (SendAudioData) is hidden the same way', async () => {
      const client = await connectClient(hub.url, { protocol, skipNegotiation: true });
      const errors: string[] = [];
      client.on('Error', (text: string) => errors.push(text));
      try {
        await new Promise<void>((resolve) => {
          client.on('SessionJoined', () => resolve());
          void client.invoke('JoinSession', 's1', deviceToken);
        });
        assert.equal(await withTimeout(client.invoke('SendAudioData', 's1', 'AAAA'), 5000, 'SendAudioData'), null);
        await waitUntil(() => errors.length > 0, 'the Error event', 5000);
        const traceId = TRACE.exec(errors[0]!)?.[1];
        assert.ok(traceId, `not the generic text: ${errors[0]}`);
        const logged = logLines.filter((l) => l.includes(traceId));
        assert.equal(logged.length, 1);
        assert.match(logged[0]!, /^fail: Hub: 'SendAudioData' from \S+ failed \(trace id [^)]+\): TypeError: Cannot read properties of undefined \(reading 'count'\)\s+at /);
      } finally {
        await client.stop();
      }
    });

    const coded: [string, string, unknown[], string][] = [
      ['an unknown session', 'JoinSession', ['nope', 'TOKEN'], "session 'nope' does not exist"],
      ['a bad token', 'JoinSession', ['s1', 'not-a-token'], 'Invalid device token: The token is invalid.'],
      ['audio before joining', 'SendAudioData', ['s1', 'AAAA'], "join session 's1' before sending audio to it"],
      ['audio for an unknown session', 'SendAudioData', ['nope', 'AAAA'], "session 'nope' does not exist"],
      ['a session id that is not text', 'SendAudioData', [42, 'AAAA'], 'SendAudioData expects (sessionId: string, audio)'],
    ];
    for (const [name, method, args, text] of coded) {
      it(`a coded domain error reaches the device as its text: ${name}`, async () => {
        const before = logLines.length;
        const { result, errors } = await invoke(method, ...args.map((a) => (a === 'TOKEN' ? deviceToken : a)));
        assert.equal(result, null);
        assert.deepEqual(errors, [text]);
        assert.ok(!logLines.slice(before).some((l) => /trace id|fail:/.test(l)), 'a client mistake is no error in the log');
      });
    }

    it('a session of the device is joined', async () => {
      const { joined, errors } = await invoke('JoinSession', 's1', deviceToken);
      assert.deepEqual({ joined, errors }, { joined: ['s1'], errors: [] });
    });
  });
}
