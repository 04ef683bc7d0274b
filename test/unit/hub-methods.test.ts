// The hub methods devices call (JoinSession, SendAudioData), called directly with a fake call context:
// what each tells the caller, which groups it joins or leaves, what it forwards upstream. Real tokens.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { voiceHubMethods } from '../../src/api/hub-methods.js';
import { TokenService } from '../../src/auth/tokens.js';
import { tokenVerifier } from '../../src/auth/verify.js';
import type { HubCallContext } from '../../src/hub/index.js';
import { silentLogger } from '../../src/log/logger.js';
import type { SessionRecord, SessionState } from '../../src/store/types.js';

const tokens = new TokenService(new TextEncoder().encode('h'.repeat(32)));
const revoked = new Set<string>();
const verifyToken = tokenVerifier(tokens, (p) => !revoked.has(p.sub));

function session(id: string, deviceId: string, state: SessionState = 'Active'): SessionRecord {
  return {
    id,
    deviceId,
    userId: '',
    state,
    startTime: '2026-01-01T00:00:00.000Z',
    endTime: null,
    endReason: null,
    config: { audioFormat: 'opus', sampleRate: 16000, channels: 1, autoMode: true, serverUrl: 'ws://127.0.0.1:9/voice' },
    audioPacketsSent: 0,
  };
}

/** A caller: what it was sent, and its groups. */
class FakeCaller implements HubCallContext {
  readonly connectionId = 'conn-1';
  readonly protocol = 'json' as const;
  readonly joined = new Set<string>();
  readonly sent: Array<[string, unknown[]]> = [];
  joinGroup(name: string): void {
    this.joined.add(name);
  }
  leaveGroup(name: string): void {
    this.joined.delete(name);
  }
  isInGroup(name: string): boolean {
    return this.joined.has(name);
  }
  groups(): string[] {
    return [...this.joined];
  }
  sendToCaller(target: string, ...args: unknown[]): void {
    this.sent.push([target, args]);
  }
}

function setup(sessions: SessionRecord[]): { caller: FakeCaller; audio: Array<[string, Uint8Array]>; attached: Array<[string, string]>; join: (...a: unknown[]) => Promise<void>; send: (...a: unknown[]) => void } {
  const caller = new FakeCaller();
  const audio: Array<[string, Uint8Array]> = [];
  const attached: Array<[string, string]> = [];
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const methods = voiceHubMethods({
    verifyToken,
    getSession: (id) => byId.get(id),
    joined: (id, connectionId) => attached.push([id, connectionId]),
    sendAudio: (id, opus) => {
      audio.push([id, opus]);
      return { sequence: audio.length, bytes: opus.length, durationMs: 20 };
    },
    logger: silentLogger,
  });
  assert.deepEqual(Object.keys(methods), ['JoinSession', 'SendAudioData']);
  return {
    caller,
    audio,
    attached,
    join: async (...a) => {
      await methods.JoinSession!.handler(caller, a);
    },
    send: (...a) => {
      methods.SendAudioData!.handler(caller, a);
    },
  };
}

const deviceToken = async (id: string): Promise<string> => (await tokens.issueDevice(id, 1, 60_000)).token;

describe('hub methods', () => {
  it('JoinSession joins the session group with the device token of its device, or an admin token', async () => {
    const { caller, join, attached } = setup([session('s1', 'dev-a'), session('s2', 'dev-b')]);
    await join('s1', await deviceToken('dev-a'));
    assert.deepEqual(caller.sent, [['SessionJoined', ['s1']]]);
    assert.deepEqual(attached, [['s1', 'conn-1']], 'the session is told who listens, to wait for it when it goes');
    assert.deepEqual([...caller.joined], ['session-s1']);
    await join('s2', (await tokens.issueAdmin(60_000)).token);
    assert.deepEqual(caller.sent.at(-1), ['SessionJoined', ['s2']]);
    assert.deepEqual([...caller.joined].sort(), ['session-s1', 'session-s2']);
  });

  it('JoinSession refuses bad arguments, tokens and sessions with an Error to the caller only', async () => {
    const { caller, join, attached } = setup([session('s1', 'dev-a'), session('s3', 'dev-a', 'Stopped')]);
    const good = await deviceToken('dev-a');
    revoked.add('dev-gone');
    const cases: Array<[unknown[], string]> = [
      [['s1'], 'JoinSession expects (sessionId: string, deviceToken: string)'],
      [[1, good], 'JoinSession expects (sessionId: string, deviceToken: string)'],
      [['s1', 'not-a-token'], 'Invalid device token: '],
      [['s1', await deviceToken('dev-gone')], 'Invalid device token: The token has been revoked.'],
      [['s1', await deviceToken('dev-b')], "Invalid device token: it does not belong to the device of session 's1'"],
      [['nope', good], "session 'nope' does not exist"],
      [['s3', good], "session 's3' is Stopped"],
    ];
    for (const [args, message] of cases) {
      caller.sent.length = 0;
      await join(...args);
      assert.equal(caller.sent.length, 1, JSON.stringify(args));
      const [target, [text]] = caller.sent[0]!;
      assert.equal(target, 'Error');
      if (message.endsWith(': ')) assert.ok(String(text).startsWith(message) && String(text).length > message.length, String(text));
      else assert.equal(text, message);
    }
    assert.equal(caller.joined.size, 0);
    assert.deepEqual(attached, [], 'a refused join attaches nothing');
  });

  it('JoinSession leaves the groups of sessions that have ended', async () => {
    const ended = session('old', 'dev-a');
    const { caller, join } = setup([ended, session('new', 'dev-a')]);
    const token = await deviceToken('dev-a');
    await join('old', token);
    caller.joinGroup('not-a-session-group');
    ended.state = 'Stopped';
    await join('new', token);
    assert.deepEqual([...caller.joined].sort(), ['not-a-session-group', 'session-new']);
  });

  it('SendAudioData forwards Base64 text or bytes of a joined session', async () => {
    const { caller, audio, join, send } = setup([session('s1', 'dev-a')]);
    await join('s1', await deviceToken('dev-a'));
    caller.sent.length = 0;
    send('s1', Buffer.from([1, 2, 3]).toString('base64'));
    send('s1', new Uint8Array([4, 5]));
    // A MIME encoder's line break (Python's base64.encodebytes), skipped as .NET skips it.
    send('s1', 'AQID\nBA==\n');
    assert.deepEqual(caller.sent, []);
    assert.deepEqual(
      audio.map(([id, bytes]) => [id, [...bytes]]),
      [
        ['s1', [1, 2, 3]],
        ['s1', [4, 5]],
        ['s1', [1, 2, 3, 4]],
      ],
    );
  });

  it('SendAudioData hands empty audio to the audio check alike, as empty text, white space or no bytes', async () => {
    // The empty text is valid Base64 of no bytes (.NET's Convert.FromBase64String), as a MessagePack
    // client's empty bin is no bytes: the device is told the packet is empty, not that its Base64 is bad.
    const { caller, audio, join, send } = setup([session('s1', 'dev-a')]);
    await join('s1', await deviceToken('dev-a'));
    caller.sent.length = 0;
    for (const empty of ['', ' \r\n', new Uint8Array(0)]) send('s1', empty);
    assert.deepEqual(caller.sent, []);
    assert.deepEqual(audio.map(([id, bytes]) => [id, bytes.length]), [['s1', 0], ['s1', 0], ['s1', 0]]);
  });

  it('SendAudioData refuses what it cannot forward, with an Error to the caller and nothing upstream', async () => {
    const { caller, audio, join, send } = setup([session('s1', 'dev-a'), session('s2', 'dev-a')]);
    await join('s1', await deviceToken('dev-a'));
    const cases: Array<[unknown[], string]> = [
      [[5, 'AAAA'], 'SendAudioData expects (sessionId: string, audio)'],
      [['nope', 'AAAA'], "session 'nope' does not exist"],
      [['s2', 'AAAA'], "join session 's2' before sending audio to it"],
      [['s1', 42], 'audio must be Base64 text (JSON protocol) or bytes (MessagePack)'],
      [['s1', 'AA*A'], 'audioDataBase64 is not valid Base64'],
      [['s1', 'AAA'], 'audioDataBase64 is not valid Base64'],
    ];
    for (const [args, message] of cases) {
      caller.sent.length = 0;
      send(...args);
      assert.deepEqual(caller.sent, [['Error', [message]]], JSON.stringify(args));
    }
    assert.equal(audio.length, 0);
  });
});
