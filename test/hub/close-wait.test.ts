// A client the hub closes while it is still sending must still get the Close message and the close
// frame. uWS waits for the client's FIN after our close frame only as long as its idleTimeout's margin;
// with idleTimeout off that was one 4-s sweep (0 to 4 s), after which uWS closed the socket, the
// client's next bytes drew a reset, and the reset made the client drop the unread Close message and
// close frame (1006 instead of 1000 and the reason). The clients here are bare sockets that keep
// sending and hold their reading off, so that nothing reads for them.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { hubIdleTimeoutSeconds, UWS_MAX_IDLE_TIMEOUT_S } from '../../src/hub/close-wait.js';
import { ErrorText } from '../../src/hub/errors.js';
import { shippedBudgets, startHub } from './helpers.js';
import { closeFrame, collect, ending, keepSending, pausedHubClient, serverFrames, textFrame, upgradeSocket } from '../support/raw-websocket.js';
import { withTimeout } from '../support/wait.js';

const { burst, perSecond } = shippedBudgets.budgets.unauthenticated;
const PING = '{"type":6}\u001e';
const HANDSHAKE_ANSWER = '{}\u001e';
const closeMessage = (error: string | undefined, allowReconnect: boolean): string =>
  `${JSON.stringify({ type: 7, ...(error === undefined ? {} : { error }), allowReconnect })}\u001e`;

/** A hub of its own and a paused client of it (pausedHubClient), both ended with the test. */
async function hubWithPausedClient(t: TestContext) {
  const hub = await startHub();
  t.after(() => hub.stop());
  const client = await pausedHubClient(hub.url);
  t.after(() => client.socket.destroy());
  return { hub, ...client };
}

describe('a closed client that is still sending gets the Close message and the close frame', () => {
  it('still arrives when the client reads nothing for 6 s after the close while it keeps sending', async (t) => {
    const { socket, got } = await hubWithPausedClient(t);
    // Over the unauthenticated burst in one frame: the hub closes the connection at once.
    socket.write(textFrame(PING.repeat(burst + 10)));
    const writeError = await keepSending(socket, textFrame(PING), 6000, 100);
    socket.resume();
    socket.end(closeFrame());
    const error = await withTimeout(got.ended, 10_000, 'the end of the stream');
    assert.deepEqual(
      { error, writeError, ...ending(serverFrames(got.bytes())) },
      { error: undefined, writeError: undefined, messages: [HANDSHAKE_ANSWER, closeMessage(ErrorText.rateLimited(burst, perSecond), true)], closeCode: 1000 },
    );
  });

  it('is not waited for forever: a client that never answers the close is dropped after 12 to 16 s', async (t) => {
    const hub = await startHub();
    t.after(() => hub.stop());
    const socket = await upgradeSocket(hub.url);
    t.after(() => socket.destroy());
    const got = collect(socket);
    socket.write(textFrame('{"protocol":"json","version":1}\u001e'));
    socket.write(textFrame(PING.repeat(burst + 10)));
    const closedAt = performance.now();
    // It reads everything but never sends its FIN or a close frame; its pings find the socket gone.
    const error = await keepSending(socket, textFrame(PING), 40_000, 250);
    const seconds = (performance.now() - closedAt) / 1000;
    // The reset reaches the client as the answer to a write (EPIPE) or on its own (ECONNRESET).
    assert.match(String(error), /^(ECONNRESET|EPIPE)$/);
    // The 16-s wait fires at one of uWS's 4-s sweeps: after 12 to 16 s, later on a busy machine.
    assert.ok(seconds >= 11 && seconds < 30, `dropped after ${seconds.toFixed(1)} s`);
    assert.equal(ending(serverFrames(got.bytes())).closeCode, 1000);
  });
});

describe('closeAll with a grace', () => {
  it('leaves the socket to the client, which reads the Close message late and closes; what it sent meanwhile is not handled', async (t) => {
    const { hub, socket, got } = await hubWithPausedClient(t);
    const start = performance.now();
    let closedAfter: number | undefined;
    const closing = hub.server.closeAll({ error: 'Server is shutting down.', allowReconnect: true }, 20_000).then(() => (closedAfter = performance.now() - start));
    // An invocation after the Close would be answered by a Completion if it were handled.
    const writeError = await keepSending(socket, textFrame('{"type":1,"invocationId":"9","target":"BytesInfo","arguments":["x"]}\u001e'), 500, 100);
    assert.equal(closedAfter, undefined, 'closeAll waits while the client has not closed');
    socket.resume();
    await withTimeout(new Promise((resolve) => socket.once('data', resolve)), 5000, 'the Close message');
    socket.end(closeFrame());
    await withTimeout(closing, 5000, 'closeAll');
    const error = await withTimeout(got.ended, 5000, 'the end of the stream');
    assert.deepEqual(
      { error, writeError, ...ending(serverFrames(got.bytes())), connections: hub.server.connectionCount() },
      { error: undefined, writeError: undefined, messages: [HANDSHAKE_ANSWER, closeMessage('Server is shutting down.', true)], closeCode: 1000, connections: 0 },
    );
    assert.ok(closedAfter! < 5000, `closeAll took ${closedAfter} ms`);
  });

  it('closes what is left when the grace ends, and at once what has no handshake yet', async (t) => {
    const { hub, socket, got } = await hubWithPausedClient(t);
    const bare = await upgradeSocket(hub.url);
    t.after(() => bare.destroy());
    const bareGot = collect(bare);
    const start = performance.now();
    const closing = hub.server.closeAll({ allowReconnect: true }, 1500);
    const bareError = await withTimeout(bareGot.ended, 1000, 'the connection without a handshake to close');
    await closing;
    const took = performance.now() - start;
    socket.resume();
    const error = await withTimeout(got.ended, 5000, 'the end of the stream');
    assert.deepEqual(
      { bareError, bare: ending(serverFrames(bareGot.bytes())), error, ...ending(serverFrames(got.bytes())), connections: hub.server.connectionCount() },
      { bareError: undefined, bare: { messages: [], closeCode: 1000 }, error: undefined, messages: [HANDSHAKE_ANSWER, closeMessage(undefined, true)], closeCode: 1000, connections: 0 },
    );
    assert.ok(took >= 1400, `closeAll returned after ${took.toFixed(0)} ms, before its grace`);
  });
});

describe('the idleTimeout that sets the close wait', () => {
  it('is uWS\'s largest, for a 16-s wait, while Hub.ClientTimeout closes a silent connection well before it', () => {
    assert.deepEqual(
      [30_000, 940_000, 940_001, 2 ** 31 - 1].map((ms) => hubIdleTimeoutSeconds(ms)),
      [UWS_MAX_IDLE_TIMEOUT_S, UWS_MAX_IDLE_TIMEOUT_S, 0, 0],
    );
  });
});
