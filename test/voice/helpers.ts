// Shared helpers for the voice tests: an in-memory SessionRepository, a recording session listener, a
// recording logger and the speech fixture.
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { WebSocketServer } from 'ws';
import { DomainError } from '../../src/errors.js';
import { readFileSync } from 'node:fs';
import { Decoder, Encoder } from '@evan/opus';
import { loadConfig } from '../../src/config/load.js';
import { hubEventOf } from '../../src/api/hub-session-bridge.js';
import { Base64Text } from '../../src/hub/base64-text.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import type { SessionEvent, SessionListener } from '../../src/voice/session-events.js';
import type { OpusSampleRate } from '../../src/opus-format.js';
import { sessionBudgets } from '../../src/voice/budgets.js';
import type { SessionBudgets } from '../../src/voice/session.js';
import { VoiceSessionService } from '../../src/voice/sessions.js';
import type { SessionRecord, SessionRepository } from '../../src/store/types.js';

/** Repositories are plain data: this one keeps records in a Map and remembers every save. */
export class MemorySessionRepository implements SessionRepository {
  readonly records = new Map<string, SessionRecord>();
  readonly saves: { record: SessionRecord; durable: boolean }[] = [];
  /** How long a durable save waits for its (imagined) disk: what lets concurrent work run meanwhile. */
  durableDelayMs = 0;
  /** Durable saves fail as the store's do on a full disk: the change is reverted and the save rejects. */
  failDurable = false;

  get(id: string): SessionRecord | undefined {
    const r = this.records.get(id);
    return r && structuredClone(r);
  }
  listOpen(): SessionRecord[] {
    return [...this.records.values()].filter((r) => r.state === 'Starting' || r.state === 'Active').map((r) => structuredClone(r));
  }
  /** Sources of records to be written later (saveLater), read as a flush of the store would. */
  readonly later = new Map<string, () => SessionRecord>();

  saveLater(id: string, latest: () => SessionRecord): void {
    this.later.set(id, latest);
  }

  /** What the store does when the device is deleted: its sessions' records, stored and queued, go with it. */
  removeDevice(deviceId: string): void {
    for (const [id, r] of this.records) if (r.deviceId === deviceId) this.records.delete(id);
    for (const [id, latest] of this.later) if (latest().deviceId === deviceId) this.later.delete(id);
  }

  /** What a timed flush of the store does: each queued source's record, as it stands now, is saved. */
  flush(): void {
    for (const latest of this.later.values()) void this.save(latest());
    this.later.clear();
  }

  async save(session: SessionRecord, durable = false): Promise<void> {
    if (durable) this.later.delete(session.id);
    const copy = structuredClone(session);
    const before = this.records.get(copy.id);
    this.records.set(copy.id, copy);
    this.saves.push({ record: copy, durable });
    if (!durable) return;
    if (this.durableDelayMs > 0) await new Promise((r) => setTimeout(r, this.durableDelayMs));
    if (this.failDurable) {
      if (before) this.records.set(copy.id, before);
      else this.records.delete(copy.id);
      throw new DomainError('unavailable', 'storage is not writable: ENOSPC: no space left on device, write');
    }
  }
}

export interface GroupEvent { sessionId: string; target: string; payload: unknown }

/**
 * A session listener recording the domain events as they come (`domain`) and, through the hub bridge's
 * mapping, what the hub sends to `session-<id>` for them (`events`, by SignalR target).
 */
export class RecordingEvents {
  readonly domain: SessionEvent[] = [];
  readonly events: GroupEvent[] = [];
  private waiters: (() => void)[] = [];

  readonly listener: SessionListener = (event) => {
    this.domain.push(event);
    const out = hubEventOf(event);
    // Payloads as devices read them: Base64Text is the Base64 string.
    if (out) this.events.push({ sessionId: event.sessionId, target: out.target, payload: out.payload instanceof Base64Text ? out.payload.text : out.payload });
    for (const wake of this.waiters.splice(0)) wake();
  };

  /** The domain events of one type, in order. */
  ofType<T extends SessionEvent['type']>(type: T, sessionId?: string): Extract<SessionEvent, { type: T }>[] {
    return this.domain.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type && (sessionId === undefined || e.sessionId === sessionId));
  }

  /** Resolves once `count` domain events of `type` were recorded; rejects after `timeoutMs`. */
  async waitForType<T extends SessionEvent['type']>(type: T, count = 1, sessionId?: string, timeoutMs = 5000): Promise<Extract<SessionEvent, { type: T }>[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.ofType(type, sessionId);
      if (found.length >= count) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${count} '${type}' event(s); seen: ${this.domain.map((e) => e.type).join(', ') || 'none'}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  of(target: string, sessionId?: string): GroupEvent[] {
    return this.events.filter((e) => e.target === target && (sessionId === undefined || e.sessionId === sessionId));
  }

  /** Resolves once `count` events of `target` were recorded; rejects after `timeoutMs`. */
  async waitFor(target: string, count = 1, sessionId?: string, timeoutMs = 5000): Promise<GroupEvent[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.of(target, sessionId);
      if (found.length >= count) return found;
      const left = deadline - Date.now();
      if (left <= 0) {
        const seen = this.events.map((e) => e.target).join(', ') || 'none';
        throw new Error(`timed out waiting for ${count} ${target} event(s); seen: ${seen}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
}

/** A logger whose lines are kept for assertions. */
export function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ levels: { Default: 'Debug' }, write: (l) => lines.push(l), journald: false, timestamps: false });
  return { logger, lines };
}

/** 100 packets (2 s) of real speech, 20 ms each, to be decoded at 16 kHz mono (scripts/make-opus-fixture.sh). */
export function speechPackets(): Buffer[] {
  const url = new URL('../fixtures/speech-16k-mono.packets.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as string[]).map((b64) => Buffer.from(b64, 'base64'));
}

/**
 * Three packets (CELT, SILK, hybrid; 48 kHz stereo) decoded one after the other by one decoder of the
 * bundled wasm libopus: the second runs its stack 4 KiB past its end, over libopus' tables, and the third
 * traps ("memory access out of bounds"), unless opus-wasm.ts catches the first. The system libopus
 * decodes them. Found by decoding random packets with both (opus-wasm.ts, OpusTrapError).
 */
export function wasmTrapPackets(): Buffer[] {
  const url = new URL('../fixtures/wasm-opus-trap.packets.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as string[]).map((b64) => Buffer.from(b64, 'base64'));
}

/** Deterministic pseudo-random numbers in [-0.5, 0.5) (a linear congruential generator). */
function noise(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5;
}

/**
 * Opus packets (20 ms, application `audio`) encoded by native libopus (`@evan/opus`) from a synthetic signal:
 * `sine-noise` is a tone per channel plus noise at 3/4 of full scale; `square` is an overdriven square wave
 * whose decoded output exceeds full scale, so libopus' soft clipping matters.
 */
export function synthPackets(rate: OpusSampleRate, channels: 1 | 2, packets: number, shape: 'sine-noise' | 'square'): Buffer[] {
  const encoder = new Encoder({ channels, sample_rate: rate, application: 'audio' });
  const frame = rate / 50;
  const rnd = noise(12345);
  const out: Buffer[] = [];
  for (let p = 0; p < packets; p++) {
    const pcm = new Int16Array(frame * channels);
    for (let i = 0; i < frame; i++) {
      const t = (p * frame + i) / rate;
      for (let c = 0; c < channels; c++) {
        const phase = 2 * Math.PI * (440 + 110 * c) * t;
        const v = shape === 'square'
          ? (Math.sin(phase) >= 0 ? 32767 : -32768)
          : 20000 * Math.sin(phase) + 9000 * rnd();
        pcm[i * channels + c] = Math.max(-32768, Math.min(32767, Math.round(v)));
      }
    }
    out.push(Buffer.from(encoder.encode(pcm))); // copied: @evan/opus reuses its output buffer
  }
  return out;
}

/** Native libopus' own int16 decode (`@evan/opus` calls opus_decode), one fresh decoder for the sequence. */
export function referenceDecode(packets: readonly Uint8Array[], rate: OpusSampleRate, channels: 1 | 2): Buffer[] {
  const decoder = new Decoder({ channels, sample_rate: rate });
  return packets.map((p) => Buffer.from(decoder.decode(p)));
}

export interface PcmComparison { samples: number; differing: number; maxDiff: number; snrDb: number }

/** Compares two 16-bit little-endian PCM buffers; SNR is reference power over difference power. */
export function comparePcm(reference: Buffer, actual: Buffer): PcmComparison {
  if (reference.length !== actual.length) throw new Error(`PCM lengths differ: ${reference.length} vs ${actual.length}`);
  let differing = 0, maxDiff = 0, signal = 0, error = 0;
  for (let i = 0; i < reference.length; i += 2) {
    const r = reference.readInt16LE(i);
    const d = Math.abs(r - actual.readInt16LE(i));
    if (d !== 0) differing++;
    maxDiff = Math.max(maxDiff, d);
    signal += r * r;
    error += d * d;
  }
  return { samples: reference.length / 2, differing, maxDiff, snrDb: error === 0 ? Infinity : 10 * Math.log10(signal / error) };
}

/** The shipped per-session budgets, with some keys set as on the command line ('VoiceService.ReconnectDelay': '00:00:00.0500000'). */
export function testBudgets(flags: Record<string, unknown> = {}): SessionBudgets {
  return sessionBudgets(loadConfig({ flags }).config.VoiceService);
}

/** A WebSocket voice server on a loopback port, its connections cut and itself closed after the test. */
export async function loopbackUpstream(t: TestContext): Promise<{ upstream: WebSocketServer; url: string }> {
  const upstream = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => upstream.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => { for (const c of upstream.clients) c.terminate(); upstream.close(() => resolve()); }));
  return { upstream, url: `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}/voice` };
}

/** A session service talking to `serverUrl` with the shipped budgets, every device present, its log recorded. */
export function loggedSessionService(serverUrl: string): { service: VoiceSessionService; lines: string[] } {
  const { logger, lines } = recordingLogger();
  const service = new VoiceSessionService({
    config: {
      serverUrl,
      apiKey: '',
      connectTimeoutMs: 2000,
      sessionIdleTimeoutMs: 60_000,
      deviceReconnectGraceMs: 5000,
      enableVoice: () => true,
      budgets: testBudgets(),
    },
    sessions: new MemorySessionRepository(),
    deviceGeneration: () => 1,
    voiceDefaults: () => ({ sampleRate: 16000, channels: 1 }),
    logger,
  });
  return { service, lines };
}

/** Answers a raw socket's WebSocket upgrade request (the first bytes it read) with the 101, as a server would. */
export function acceptUpgrade(socket: Socket, request: Buffer): void {
  const key = /sec-websocket-key: (.*)\r\n/i.exec(request.toString())![1]!;
  const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
}

/**
 * A voice server speaking raw TCP on a loopback port: each connection's upgrade is accepted, and then
 * `upgraded` has its socket. `allowHalfOpen`: the client's FIN is not answered with one of its own.
 */
export async function rawUpstream(upgraded: (socket: Socket) => void, allowHalfOpen = false): Promise<{ url: string; close: () => void }> {
  const sockets: Socket[] = [];
  const server = createServer({ allowHalfOpen }, (s) => {
    sockets.push(s);
    s.on('error', () => {});
    s.once('data', (request) => {
      acceptUpgrade(s, request);
      upgraded(s);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => { for (const s of sockets) s.destroy(); server.close(); },
  };
}
