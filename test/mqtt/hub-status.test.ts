// The hub's state from domain events, pure: which upstream state wins when sessions disagree, and
// that only real changes count as changes (each one is a retained publish).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HubStatus } from '../../src/mqtt/hub-status.js';
import type { SessionEvent } from '../../src/voice/session-events.js';

const at = new Date('2025-01-02T03:04:05.000Z');
const started = (sessionId: string): SessionEvent => ({ type: 'started', sessionId, deviceId: 'd', userId: 'u', at });
const ended = (sessionId: string): SessionEvent => ({ type: 'ended', sessionId, deviceId: 'd', state: 'Stopped', reason: 'stopped', at });
const link = (sessionId: string, state: 'reconnecting' | 'open' | 'unreachable'): SessionEvent => ({ type: 'upstreamLink', sessionId, state });

describe('HubStatus', () => {
  it('upstream: connected while any connection is open, else reconnecting, else unreachable after a failed attempt, else idle', () => {
    const hub = new HubStatus('1.2.3');
    const steps: [SessionEvent, boolean, number, string][] = [
      [started('a'), true, 1, 'connected'],
      [started('b'), true, 2, 'connected'],
      [link('x', 'unreachable'), false, 2, 'connected'], // a start refused while a and b are connected
      [link('a', 'reconnecting'), false, 2, 'connected'], // b's connection is still open
      [link('b', 'unreachable'), true, 2, 'reconnecting'], // b's reconnects ran out while a still tries
      [ended('b'), true, 1, 'reconnecting'],
      [link('a', 'open'), true, 1, 'connected'], // a reconnected: the upstream answers again
      [ended('a'), true, 0, 'idle'],
      [link('c', 'unreachable'), true, 0, 'unreachable'], // a start that could not connect
      [link('d', 'unreachable'), false, 0, 'unreachable'],
      [started('e'), true, 1, 'connected'],
      [started('f'), true, 2, 'connected'],
      [link('f', 'reconnecting'), false, 2, 'connected'],
      [link('f', 'unreachable'), false, 2, 'connected'], // f gave up while e's connection is open
      [ended('f'), true, 1, 'connected'],
      [ended('e'), true, 0, 'idle'], // e closed normally: f's failure was never the server's state
      [started('g'), true, 1, 'connected'],
      [link('g', 'reconnecting'), true, 1, 'reconnecting'],
      [link('g', 'unreachable'), true, 1, 'unreachable'],
      [ended('g'), true, 0, 'unreachable'],
      [ended('nobody'), false, 0, 'unreachable'],
      [{ type: 'text', sessionId: 'e', text: 'hi', final: true }, false, 0, 'unreachable'],
    ];
    for (const [event, changed, activeSessions, upstream] of steps) {
      assert.equal(hub.sessionEvent(event), changed, JSON.stringify(event));
      assert.deepEqual(hub.state, { version: '1.2.3', activeSessions, devicesOnline: 0, upstream }, JSON.stringify(event));
    }
  });

  it('devices online: any status but offline (in any case); changes only when the count does', () => {
    const hub = new HubStatus('1.2.3');
    assert.equal(hub.deviceChanged({ id: 'a', status: 'online' }), true);
    assert.equal(hub.deviceChanged({ id: 'a', status: 'busy' }), false);
    assert.equal(hub.deviceChanged({ id: 'b', status: 'OFFLINE' }), false);
    assert.equal(hub.deviceChanged({ id: 'b', status: 'sleeping' }), true);
    assert.equal(hub.state.devicesOnline, 2);
    assert.equal(hub.deviceChanged({ id: 'a', status: 'Offline' }), true);
    assert.equal(hub.deviceDeleted('a'), false, 'an offline device leaving changes no count');
    assert.equal(hub.deviceDeleted('b'), true);
    assert.equal(hub.state.devicesOnline, 0);
  });
});
