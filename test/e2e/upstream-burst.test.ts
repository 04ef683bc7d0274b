// An upstream that answers far faster than real time: 1,500 audio answers, 30 s of 16 kHz speech (about
// 1.7 MB of AudioResponse and AudioData in JSON), sent at once, as a speech engine may send a long answer. A member with
// stateful reconnect is sent only as fast as it acknowledges (about Hub.StatefulReconnectBufferSize a
// second); what waits for it is bounded at 1 MiB, past which it was ended as too slow after 88 of 1,500
// answers. The session now reads its upstream at the pace of its slowest member (src/voice/receiver-pace.ts):
// every answer arrives and the connection stays.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { HubConnectionBuilder, HubConnectionState, LogLevel } from '@microsoft/signalr';
import { WebSocketServer } from 'ws';
import { registerDevice } from '../support/tokens.js';
import { startService, type TestService } from '../support/service.js';
import { startSession } from '../support/voice.js';
import { withTimeout } from '../support/wait.js';
import { speechPackets } from '../voice/helpers.js';

const ANSWERS = 1500;

describe('an upstream burst to a stateful member', () => {
  let upstream: WebSocketServer;
  let svc: TestService;
  before(async () => {
    const packet = speechPackets()[10]!.toString('base64');
    upstream = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => upstream.once('listening', resolve));
    // The whole answer at once, on the device's first packet.
    upstream.on('connection', (socket) => socket.once('message', () => socket.once('message', () => {
      for (let i = 0; i < ANSWERS; i++) socket.send(JSON.stringify({ type: 'audio', data: packet }));
    })));
    svc = await startService({
      flags: {
        'VoiceService.ServerUrl': `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}/voice`,
        'Mqtt.BrokerAddress': '',
        'Hub.StatefulReconnectBufferSize': 400_000,
      },
    });
  });
  after(async () => {
    await svc?.stop();
    for (const c of upstream?.clients ?? []) c.terminate();
    await new Promise<void>((resolve) => upstream?.close(() => resolve()));
  });

  it(`receives all ${ANSWERS} answers and stays connected`, async () => {
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token);
    const connection = new HubConnectionBuilder().withUrl(`${svc.url}/voice-hub`).withStatefulReconnect().configureLogging(LogLevel.None).build();
    let closed: Error | undefined | 'no error';
    connection.onclose((e) => (closed = e ?? 'no error'));
    const responses: string[] = [];
    connection.on('AudioResponse', (pcm: string) => responses.push(pcm));
    await connection.start();
    try {
      await connection.invoke('JoinSession', sessionId, device.token);
      await connection.invoke('SendAudioData', sessionId, speechPackets()[0]!.toString('base64'));
      await withTimeout((async () => {
        while (responses.length < ANSWERS && closed === undefined) await new Promise((r) => setTimeout(r, 50));
      })(), 60_000, `${ANSWERS} AudioResponses (${responses.length} so far)`);
      assert.equal(closed, undefined, `the connection closed after ${responses.length} answers: ${String(closed)}`);
      assert.equal(responses.length, ANSWERS);
      assert.equal(Buffer.from(responses[0]!, 'base64').length, 320 * 2, '20 ms at 16 kHz mono');
      assert.equal(connection.state, HubConnectionState.Connected);
    } finally {
      await connection.stop();
    }
  });
});
