// SIGTERM with a hub client that is still sending and has not yet read: it must get the Close message
// (allowReconnect) and the close frame. The shutdown used to send them and exit at once; the exiting
// process's sockets answered the client's next bytes with a TCP reset, and the reset made the client
// drop the Close message unread. Now the hub leaves its sockets to the clients for up to a second.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { spawnService } from '../support/service.js';
import { closeFrame, ending, keepSending, pausedHubClient, serverFrames, textFrame } from '../support/raw-websocket.js';
import { tmpDir } from '../support/tmp.js';
import { withTimeout } from '../support/wait.js';

describe('SIGTERM with a hub client still sending', () => {
  it('the client reads the Close message after the signal, closes, and the service exits 0 soon after', async () => {
    const svc = await spawnService(['--data-dir', tmpDir(), '--Mqtt.BrokerAddress', '']);
    const { socket, got } = await pausedHubClient(`${svc.url}/voice-hub`);
    const signalledAt = performance.now();
    svc.proc.kill('SIGTERM');
    // A device mid-stream: it goes on sending for 400 ms before it reads again.
    const writeError = await keepSending(socket, textFrame('{"type":6}\u001e'), 400, 50);
    socket.resume();
    await withTimeout(new Promise((resolve) => socket.once('data', resolve)), 5000, 'the Close message');
    socket.end(closeFrame());
    const error = await withTimeout(got.ended, 5000, 'the end of the stream');
    const code = await withTimeout(svc.exited, 10_000, 'the service to exit');
    const seconds = (performance.now() - signalledAt) / 1000;
    assert.deepEqual(
      { code, error, writeError, ...ending(serverFrames(got.bytes())) },
      { code: 0, error: undefined, writeError: undefined, messages: ['{}\u001e', '{"type":7,"allowReconnect":true}\u001e'], closeCode: 1000 },
      svc.output(),
    );
    assert.ok(seconds < 5, `the service exited ${seconds.toFixed(1)} s after SIGTERM`);
  });
});
