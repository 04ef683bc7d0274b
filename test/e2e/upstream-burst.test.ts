// An upstream that answers far faster than real time, as a speech engine may send a long answer: the
// session reads it at the pace of its slowest member (src/voice/receiver-pace.ts), so a member with
// stateful reconnect (sent only as fast as it acknowledges, about Hub.StatefulReconnectBufferSize a
// second; owed at most 1 MiB, past which it is ended as too slow) gets every answer and stays:
// - 1,500 answers of 20 ms at 16 kHz (about 1.7 MB in JSON): before the pace, ended after 88;
// - 60 answers of 120 ms at 48 kHz stereo (31 KB each): the frames already being decoded when the pace
//   paused went out whole, and ended the member after about 20 (src/voice/upstream-inbound.ts bounds them);
// - a burst in another format than the session's: while the decoder was rebuilt for it, frames queued
//   behind 32 and the rest were dropped; reading now pauses meanwhile;
// - a member whose socket is gone (waiting for its stateful reconnect) cannot drain: it held the other
//   members' answers back 5 s before; it is not waited for;
// - a stateful member that never acknowledges is given up on after 2 s without progress: the session
//   then read on at full speed, and its healthy stateful members passed the 1 MiB bound with it (ended
//   after about 300 of 1,500 in an outside probe); it now goes on at their pace, and only the stalled one
//   is ended.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection } from '@microsoft/signalr';
import WebSocket, { WebSocketServer } from 'ws';
import { startDropRelay, type DropRelay } from '../../src/cli/drop-relay.js';
import { registerDevice } from '../support/tokens.js';
import { startService, type TestService } from '../support/service.js';
import { startSession } from '../support/voice.js';
import { withTimeout } from '../support/wait.js';
import { speechPackets } from '../voice/helpers.js';

/** What the upstream answers the device's first packet with, all at once. */
interface Burst { data: string; count: number; sampleRate?: number; channels?: number }

/** 120 ms of 48 kHz stereo (TOC: CELT fullband 20 ms, stereo, code 3; six empty frames): 23,040 bytes of PCM. */
const STEREO_120MS = Buffer.from([0xff, 0x06]).toString('base64');
/** 20 ms of 48 kHz stereo (code 0, an empty frame): 3,840 bytes of PCM. */
const STEREO_20MS = Buffer.from([0xfc]).toString('base64');

describe('an upstream burst', () => {
  let upstream: WebSocketServer;
  let svc: TestService;
  let relay: DropRelay;
  let burst: Burst;
  before(async () => {
    upstream = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => upstream.once('listening', resolve));
    // `start`, then the device's first packet: the whole answer at once.
    upstream.on('connection', (socket) => socket.once('message', () => socket.once('message', () => {
      const { data, count, sampleRate, channels } = burst;
      const frame = JSON.stringify({ type: 'audio', data, ...(sampleRate ? { sampleRate, channels } : {}) });
      for (let i = 0; i < count; i++) socket.send(frame);
    })));
    svc = await startService({
      flags: {
        'VoiceService.ServerUrl': `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}/voice`,
        'Mqtt.BrokerAddress': '',
        'Hub.StatefulReconnectBufferSize': 400_000,
      },
    });
    relay = await startDropRelay({ host: '127.0.0.1', port: svc.port });
  });
  after(async () => {
    relay?.close();
    await svc?.stop();
    for (const c of upstream?.clients ?? []) c.terminate();
    await new Promise<void>((resolve) => upstream?.close(() => resolve()));
  });

  /** A member of the session, counting its AudioResponses and Errors; `via` a relay to cut it there. */
  async function member(sessionId: string, token: string, opts: { stateful: boolean; via?: DropRelay }) {
    let builder = new HubConnectionBuilder().withUrl(`http://127.0.0.1:${opts.via?.port ?? svc.port}/voice-hub`).configureLogging(LogLevel.None);
    if (opts.stateful) builder = builder.withStatefulReconnect();
    const connection: HubConnection = builder.build();
    const got = { responses: [] as string[], errors: [] as string[], at: [] as number[], closed: undefined as Error | undefined | 'no error' };
    connection.onclose((e) => (got.closed = e ?? 'no error'));
    connection.on('AudioResponse', (pcm: string) => { got.responses.push(pcm); got.at.push(performance.now()); });
    connection.on('Error', (e: string) => got.errors.push(e));
    await connection.start();
    await connection.invoke('JoinSession', sessionId, token);
    return { connection, got };
  }

  async function until(got: { responses: string[]; closed: unknown }, count: number, ms: number): Promise<void> {
    await withTimeout((async () => {
      while (got.responses.length < count && got.closed === undefined) await new Promise((r) => setTimeout(r, 50));
    })(), ms, `${count} AudioResponses (${got.responses.length} so far)`);
  }

  const cases: Array<{ name: string; burst: Burst; session?: Record<string, unknown>; stateful: boolean; pcmBytes: number }> = [
    { name: '1,500 answers of 20 ms at 16 kHz mono, to a stateful member', burst: { data: speechPackets()[10]!.toString('base64'), count: 1500 }, stateful: true, pcmBytes: 320 * 2 },
    { name: '60 answers of 120 ms at 48 kHz stereo, to a stateful member', burst: { data: STEREO_120MS, count: 60 }, session: { audioFormat: 'opus', sampleRate: 48000, channels: 2 }, stateful: true, pcmBytes: 5760 * 2 * 2 },
    { name: '1,500 answers at 48 kHz stereo into a 16 kHz mono session (one decoder rebuild)', burst: { data: STEREO_20MS, count: 1500, sampleRate: 48000, channels: 2 }, stateful: false, pcmBytes: 960 * 2 * 2 },
  ];
  for (const c of cases) {
    it(`${c.name}: every answer arrives, no error, the connection stays`, async () => {
      burst = c.burst;
      const device = await registerDevice(svc);
      const { sessionId } = await startSession(svc, device.id, device.token, c.session);
      const { connection, got } = await member(sessionId, device.token, { stateful: c.stateful });
      try {
        await connection.invoke('SendAudioData', sessionId, speechPackets()[0]!.toString('base64'));
        await until(got, c.burst.count, 60_000);
        assert.equal(got.closed, undefined, `the connection closed after ${got.responses.length} answers: ${String(got.closed)}`);
        assert.deepEqual(got.errors, []);
        assert.equal(got.responses.length, c.burst.count);
        assert.equal(Buffer.from(got.responses[0]!, 'base64').length, c.pcmBytes);
        assert.equal(connection.state, HubConnectionState.Connected);
      } finally {
        await connection.stop();
      }
    });
  }

  it('a member whose socket is gone does not hold the others back', async () => {
    burst = { data: STEREO_20MS, count: 1500 };
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token, { audioFormat: 'opus', sampleRate: 48000, channels: 2 });
    // B: stateful, through the relay; cut for longer than the test, so the hub keeps it waiting (Disconnected).
    const b = await member(sessionId, device.token, { stateful: true, via: relay });
    const a = await member(sessionId, device.token, { stateful: false });
    try {
      relay.dropAll(30_000);
      await withTimeout((async () => {
        while (svc.app.hub.stats().connectionsAwaitingReconnect === 0) await new Promise((r) => setTimeout(r, 20));
      })(), 5000, 'the hub to see B dropped');
      await a.connection.invoke('SendAudioData', sessionId, speechPackets()[0]!.toString('base64'));
      await until(a.got, burst.count, 30_000);
      assert.equal(a.got.responses.length, burst.count);
      // 7.5 MB for B while it is away, at 5 KB an answer: B ends as too slow (its 1 MiB bound), A never waits.
      const longestGap = Math.max(...a.got.at.slice(1).map((t, i) => t - a.got.at[i]!));
      assert.ok(longestGap < 1500, `A waited ${longestGap.toFixed(0)} ms between two answers`);
    } finally {
      await a.connection.stop();
      await b.connection.stop().catch(() => undefined);
    }
  });
  it('a stateful member that never acknowledges is ended alone; the stateful members that drain get everything', async () => {
    // 3,000 answers (3.4 MB in JSON): at about 400 KB a second, several times the 1 MiB bound behind the stall.
    burst = { data: speechPackets()[10]!.toString('base64'), count: 3000 };
    const device = await registerDevice(svc);
    const { sessionId } = await startSession(svc, device.id, device.token);
    const healthy = [await member(sessionId, device.token, { stateful: true }), await member(sessionId, device.token, { stateful: true })];
    // The stalled one: stateful, joins, reads what comes but never sends an Ack.
    const RS = '\u001e';
    const negotiated = await (await fetch(`${svc.url}/voice-hub/negotiate?negotiateVersion=1&useStatefulReconnect=true`, { method: 'POST' })).json() as { connectionToken: string };
    const stalled = new WebSocket(`ws://127.0.0.1:${svc.port}/voice-hub?id=${negotiated.connectionToken}`);
    let stalledClosedWith = '';
    stalled.on('message', (data) => {
      for (const text of data.toString().split(RS)) if (text.includes('"type":7')) stalledClosedWith = text;
    });
    await new Promise((resolve, reject) => { stalled.once('open', resolve); stalled.once('error', reject); });
    stalled.send(`{"protocol":"json","version":2}${RS}`);
    stalled.send(`{"type":1,"invocationId":"1","target":"JoinSession","arguments":["${sessionId}","${device.token}"]}${RS}`);
    try {
      await withTimeout((async () => {
        while ((svc.app.hub.stats().connections ?? 0) < 3) await new Promise((r) => setTimeout(r, 20));
      })(), 5000, 'three members');
      await new Promise((r) => setTimeout(r, 200));
      await healthy[0]!.connection.invoke('SendAudioData', sessionId, speechPackets()[0]!.toString('base64'));
      for (const { got } of healthy) await until(got, burst.count, 60_000);
      for (const { got, connection } of healthy) {
        assert.equal(got.closed, undefined, `a healthy member closed after ${got.responses.length} answers: ${String(got.closed)}`);
        assert.equal(got.responses.length, burst.count);
        assert.equal(connection.state, HubConnectionState.Connected);
      }
      assert.equal(stalledClosedWith, '{"type":7,"error":"Server closed the connection: client too slow to receive messages.","allowReconnect":true}');
    } finally {
      stalled.terminate();
      for (const { connection } of healthy) await connection.stop();
    }
  });
});
