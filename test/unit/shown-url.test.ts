// What the commands print shows an address as scheme, host, port and path (src/cli/shown-url.ts): a query
// (`?access_token=`) or user info quoted anywhere in a line, by the command or by what it quotes, is left out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { urlsShown } from '../../src/cli/shown-url.js';

describe('urlsShown', () => {
  it('reduces every address in a line, and leaves the rest of the line as it was', () => {
    assert.equal(
      urlsShown("fail: SignalR: Failed to start the transport 'WebSockets': ws://127.0.0.1:5000/voice-hub?id=abc&access_token=HUNTER2x failed; GET http://u:pw@host:8080/api/x?k=v: HTTP 401"),
      "fail: SignalR: Failed to start the transport 'WebSockets': ws://127.0.0.1:5000/voice-hub failed; GET http://host:8080/api/x: HTTP 401",
    );
    assert.equal(urlsShown('no address here: 127.0.0.1:5000'), 'no address here: 127.0.0.1:5000');
    assert.equal(urlsShown('https://[::1]:5001/health#frag'), 'https://[::1]:5001/health');
  });
});
