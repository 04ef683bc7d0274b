// Voice sessions as the HTTP routes and the hub use them: start/stop, text and audio into a session,
// one active session per device, history kept in the
// SessionRepository. A session outlives its device's connections: it ends for a device that left only
// when nobody joined it again within the grace period (device-presence.ts). No HTTP and no hub types here: errors are DomainErrors, and what happens in a session
// goes to the listeners registered with `addListener` (the hub bridge, the MQTT publisher).
import { randomUUID } from 'node:crypto';
import { DomainError, errorText } from '../errors.js';
import { deviceNotFound } from '../devices/registry.js';
import { durationText } from '../log/duration.js';
import type { Logger } from '../log/logger.js';
import type { SessionRecord, SessionRepository } from '../store/types.js';
import { OPUS_SAMPLE_RATES, isOpusSampleRate } from './opus/decoder.js';
import { DevicePresence } from './device-presence.js';
import { DecoderPool } from './opus/decoder-pool.js';
import { VoiceSession, type AudioSent, type LinkTuning, type SessionBudgets } from './session.js';
import { SessionListeners, type SessionListener } from './session-events.js';
import { publicServerUrl } from '../upstream/public-url.js';
import { UnsavedEnds } from './unsaved-ends.js';
import type { ReceiversUnsent } from './receiver-pace.js';
import { ThrottledLog } from '../log/throttled.js';
import { monotonicMs } from '../monotonic-clock.js';
import { notBefore } from './session-dates.js';

/** The ReceiversUnsent of the session named, asked once when it starts. */
type SessionReceiversUnsent = (sessionId: string) => ReceiversUnsent;

export interface VoiceSessionDeps {
  config: {
    serverUrl: string;
    apiKey: string;
    connectTimeoutMs: number;
    sessionIdleTimeoutMs: number;
    /** How long a joined session whose every listener is gone waits for one to join again; 0 ends it at once. */
    deviceReconnectGraceMs: number;
    enableVoice: () => boolean;
    /** Per-session budgets against a misbehaving upstream. */
    budgets: SessionBudgets;
  };
  sessions: SessionRepository;
  /**
   * The token generation of the device registered under this id now, undefined when there is none. A
   * start belongs to the device registered when it began: one deleted and registered again meanwhile
   * (a new generation) is another device, whose sessions the old one's start must not open.
   */
  deviceGeneration: (deviceId: string) => number | undefined;
  /**
   * Settles once a deletion of the device being written is on disk or refused by it; undefined when none
   * is. Until then the device is missing from the store without being gone for good: a deletion the disk
   * refuses gives it back, with its sessions' records as they were before it.
   */
  deletionWritten?: (deviceId: string) => Promise<void> | undefined;
  /** From the `voice` configuration category. */
  voiceDefaults: () => { sampleRate: number; channels: number };
  /** Listeners from the start; more may be added with `addListener`. */
  listeners?: readonly SessionListener[];
  logger: Logger;
  newId?: () => string;
  now?: () => Date;
  /** Back-pressure limit and CA for the upstream links (defaults suit production). */
  link?: LinkTuning;
  /** Where the sessions' Opus decoders come from; the service closes it at shutdown. Default: inline decoding. */
  decoders?: DecoderPool;
  /** How often final records the store could not take are tried again (unsaved-ends.ts). */
  unsavedEndRetryMs?: number;
}

/** Failed starts logged per minute as they happen; the rest are summed up in one line. */
const START_FAILURE_LINES = 5;
/** Lines a minute about frames the upstream links ignored, all sessions together (each link: 3 a second). */
const INVALID_FRAME_LINES = 20;
/** Lines a minute about bursts of upstream frames the sessions dropped, all sessions together (each: 2 a burst). */
const DROP_BURST_LINES = 20;
/** Lines a minute about lost upstream connections and their reconnects, all sessions together (a session gives up in a line of its own). */
const RECONNECT_LINES = 60;
/**
 * Lines a minute about devices losing their hub connection and rejoining, all sessions together: a device
 * may drop and rejoin its session as fast as its hub connections open, two lines each time.
 */
const PRESENCE_LINES = 20;
/**
 * Lines a minute about sessions starting and stopping, all sessions together: a device (any client, as
 * registration is open as shipped) can start sessions, each replacing the last, as fast as the upstream
 * takes connections; ten devices so wrote 52 KB of log a second. A hub's devices start far fewer.
 */
const SESSION_LINES = 60;

export interface StartRequest {
  deviceId: string;
  userId: string;
  sessionConfig?: { audioFormat?: string; sampleRate?: number; channels?: number; autoMode?: boolean };
}

export class VoiceSessionService {
  private readonly live = new Map<string, VoiceSession>();
  private readonly byDevice = new Map<string, VoiceSession>();
  /** The session each device's latest start is connecting, until it replaces the device's session. */
  private readonly connecting = new Map<string, VoiceSession>();
  private readonly newId: () => string;
  private readonly now: () => Date;
  private readonly listeners: SessionListeners;
  private receiversUnsent: SessionReceiversUnsent | undefined;
  private readonly presence: DevicePresence;
  private readonly decoders: DecoderPool;
  private readonly unsavedEnds: UnsavedEnds;
  private readonly startFailures: ThrottledLog;
  private readonly invalidFrames: ThrottledLog;
  private readonly dropBursts: ThrottledLog;
  private readonly reconnects: ThrottledLog;
  private readonly presenceLines: ThrottledLog;
  private readonly sessionLines: ThrottledLog;
  private shuttingDown = false;

  constructor(private readonly deps: VoiceSessionDeps) {
    this.newId = deps.newId ?? randomUUID;
    this.now = deps.now ?? (() => new Date());
    this.listeners = new SessionListeners(deps.logger, deps.listeners);
    this.presence = new DevicePresence(deps.config.deviceReconnectGraceMs, {
      away: (id, graceMs) => this.deviceAway(id, graceMs),
      returned: (id, awayMs) => this.deviceReturned(id, awayMs),
      expired: (id, graceMs) => void this.live.get(id)?.stop(`device did not rejoin within ${durationText(graceMs)} of losing its connection`),
    });
    this.decoders = deps.decoders ?? new DecoderPool({ threads: 0, queuePerThread: 1, logger: deps.logger });
    // A record held for a device deleted since is its data, gone with it: not written back.
    this.unsavedEnds = new UnsavedEnds(
      async (record) => {
        await deps.deletionWritten?.(record.deviceId);
        if (deps.deviceGeneration(record.deviceId) !== undefined) await deps.sessions.save(record, true);
      },
      deps.logger,
      deps.unsavedEndRetryMs,
    );
    this.startFailures = new ThrottledLog(deps.logger, START_FAILURE_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more session start(s) failed in the last ${seconds} s, each recorded as Failed; the last: ${last}`);
    this.invalidFrames = new ThrottledLog(deps.logger, INVALID_FRAME_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more line(s) about ignored upstream frames left out in the last ${seconds} s; the last: ${last}`);
    this.dropBursts = new ThrottledLog(deps.logger, DROP_BURST_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more line(s) about dropped upstream frames left out in the last ${seconds} s (each session's end line has its totals); the last: ${last}`);
    this.reconnects = new ThrottledLog(deps.logger, RECONNECT_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more line(s) about lost upstream connections and reconnects left out in the last ${seconds} s; the last: ${last}`);
    this.presenceLines = new ThrottledLog(deps.logger, PRESENCE_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more line(s) about devices losing their hub connection and rejoining left out in the last ${seconds} s; the last: ${last}`);
    this.sessionLines = new ThrottledLog(deps.logger, SESSION_LINES, 60_000, () => monotonicMs(),
      (count, seconds, last) => `${count} more line(s) about sessions starting and stopping left out in the last ${seconds} s (the session history has each of them); the last: ${last}`);
  }

  /** `listener` is told every event of every session from now on. */
  addListener(listener: SessionListener): void {
    this.listeners.add(listener);
  }

  /**
   * Each receiver of a session's events and how many bytes it has been given and not yet sent: sessions
   * started from now on read upstream only as fast as they drain (receiver-pace.ts).
   */
  paceBy(unsent: SessionReceiversUnsent): void {
    this.receiversUnsent = unsent;
  }

  /**
   * At start-up: sessions the previous process left open are recorded as ended, and the end of those that
   * were Active is told to the listeners as any other (MQTT subscribers saw them start; without it they
   * never see them end). Returns how many.
   */
  async recordInterrupted(): Promise<number> {
    const open = this.deps.sessions.listOpen().filter((s) => !this.live.has(s.id));
    const at = this.now();
    const reason = 'service restarted';
    // All saved at once, so the store's group commit writes them together: one save after another
    // rewrote the whole file once per session before the service listened (1,000 sessions left open by
    // a crash: 1,000 writes of 400 KB, 18 s of start-up here, minutes on an SD card).
    // None dated before its start: the clock of a Pi without a real-time clock may start in the past.
    const endedAt = open.map((s) => notBefore(at, s.startTime));
    const ended = open.map((s, i): SessionRecord => ({ ...s, state: 'Stopped', endTime: endedAt[i]!.toISOString(), endReason: reason }));
    const saved = await Promise.allSettled(ended.map((record) => this.deps.sessions.save(record, true)));
    // A full or read-only disk must not keep the service from starting (and systemd from ever starting it
    // again once its restart limit is spent): these records are history, held and written as any session
    // end the disk refused, while the service answers from them meanwhile.
    const failed = saved.flatMap((result, i) => (result.status === 'rejected' ? [{ record: ended[i]!, reason: result.reason as unknown }] : []));
    for (const { record } of failed) this.unsavedEnds.hold(record);
    if (failed.length > 0) {
      this.deps.logger.error(`recording ${failed.length} interrupted session(s) as stopped failed (kept, and written when storage recovers): ${errorText(failed[0]!.reason)}`);
    }
    open.forEach((s, i) => {
      // One that never got past Starting told nobody it started, so its end is nobody's news either.
      if (s.state === 'Active') this.listeners.emit({ type: 'ended', sessionId: s.id, deviceId: s.deviceId, state: 'Stopped', reason, at: endedAt[i]! });
    });
    if (open.length > failed.length) this.deps.logger.info(`recorded ${open.length - failed.length} interrupted session(s) as stopped`);
    return open.length;
  }

  /**
   * Starts a session for a device; a session the device already has is stopped ('replaced') once the
   * new one's upstream connection is open. Whatever can refuse the start (the service shutting down,
   * the device deleted, the upstream unreachable, voice switched off) comes before that, so a refused start leaves the
   * device's session as it was: ended by that shutdown or deletion as any other, or still running.
   */
  async start(req: StartRequest): Promise<SessionRecord> {
    if (this.shuttingDown) throw new DomainError('unavailable', 'the service is shutting down');
    this.refuseWhileDisabled();
    const generation = this.deps.deviceGeneration(req.deviceId);
    if (generation === undefined) throw deviceNotFound(req.deviceId);
    const config = this.sessionConfig(req.sessionConfig);

    const id = this.newId();
    const unsent = this.receiversUnsent;
    const session = new VoiceSession({
      record: {
        id,
        deviceId: req.deviceId,
        userId: req.userId,
        state: 'Starting',
        startTime: this.now().toISOString(),
        endTime: null,
        endReason: null,
        config: {
          audioFormat: config.audioFormat, sampleRate: config.sampleRate, channels: config.channels, autoMode: config.autoMode,
          serverUrl: publicServerUrl(this.deps.config.serverUrl),
        },
        audioPacketsSent: 0,
      },
      deviceGeneration: generation,
      serverUrl: this.deps.config.serverUrl,
      apiKey: this.deps.config.apiKey,
      connectTimeoutMs: this.deps.config.connectTimeoutMs,
      idleTimeoutMs: this.deps.config.sessionIdleTimeoutMs,
      emit: this.listeners.emit,
      logger: this.deps.logger,
      startFailures: this.startFailures,
      dropLog: this.dropBursts,
      endLines: this.sessionLines,
      now: this.now,
      onEnded: (s) => this.ended(s),
      budgets: this.deps.config.budgets,
      decoder: this.decoders.create(),
      link: { ca: this.deps.link?.ca, maxBufferedBytes: this.deps.link?.maxBufferedBytes, invalidFrameLog: this.invalidFrames, reconnectLog: this.reconnects },
      receiversUnsent: unsent?.(id),
    });
    // Live while it connects, so a shutdown or the device's deletion meanwhile ends it with the rest.
    this.live.set(session.id, session);
    // The latest start wins: one of the device's still connecting is given up (its start answered 409),
    // or a device firing starts at once held an upstream connection and a decoder for each.
    const earlier = this.connecting.get(req.deviceId);
    this.connecting.set(req.deviceId, session);
    void earlier?.stop('replaced');
    try {
      try {
        await this.save(session);
      } catch (e) {
        await session.stop('its record could not be written');
        throw e;
      }
      await session.connect(); // on failure the session has ended as Failed and been persisted by ended()
      // Switched off while it connected: refused as a start a moment later is, the device's session left running.
      if (!this.deps.config.enableVoice()) {
        await session.stop('voice features were disabled');
        this.refuseWhileDisabled();
      }
    } catch (e) {
      // Ended while connecting by a shutdown or the device's deletion: answered as a start that came a
      // moment later is (503, 404), which would have found the device's session ended the same way.
      this.refuseGoneStart(req.deviceId, generation);
      throw e;
    } finally {
      if (this.connecting.get(req.deviceId) === session) this.connecting.delete(req.deviceId);
    }

    // In one turn: the device's session is replaced by this one, which a later start replaces in its turn.
    if (session.state === 'Starting') {
      const previous = this.byDevice.get(req.deviceId);
      this.byDevice.set(req.deviceId, session);
      // Its members hear it ended before this one's hear it started.
      const replaced = previous?.stop('replaced');
      session.activate();
      await replaced;
      // On disk before the answer: a start answered 200 and lost to a crash turned its id into a 404.
      try {
        await this.save(session, true);
      } catch (e) {
        await session.stop('its record could not be written');
        throw e;
      }
    }
    // Those writes let a concurrent start replace this session (or a stop, a shutdown, a DELETE end it):
    // answered 200, its client would hold the id of a session that is already over.
    await session.confirmStarted();
    this.sessionLines.info(`session ${session.id} started for device ${session.deviceId}`);
    return session.snapshot();
  }

  /** Stops a session and returns its final record; stopping an ended session returns its record as is. */
  async stop(sessionId: string, reason = 'stopped'): Promise<SessionRecord> {
    const session = this.live.get(sessionId);
    await session?.stop(reason);
    // A stop is answered once its end is on disk, as a start is once its record is: a final record that
    // could not be written is tried again here, and its 503 says the session is over all the same.
    try {
      await this.unsavedEnds.write(sessionId);
    } catch (e) {
      throw new DomainError('unavailable', `session '${sessionId}' is stopped, but its final record could not be written (${errorText(e)}); it is written when storage recovers`);
    }
    // The ended session's own record, not the store's: writing it may have pruned it from the history
    // already (Storage.SessionHistory 0, or other sessions ending meanwhile), and the stop did happen.
    const record = session?.snapshot() ?? this.get(sessionId);
    if (!record) throw sessionNotFound(sessionId);
    return record;
  }

  sendText(sessionId: string, text: string, messageType: string): void {
    if (typeof text !== 'string' || text.length === 0) throw new DomainError('invalid_argument', 'text must be a non-empty string', { text: ['must be a non-empty string'] });
    if (typeof messageType !== 'string' || messageType.length === 0) {
      throw new DomainError('invalid_argument', 'messageType must be a non-empty string', { messageType: ['must be a non-empty string'] });
    }
    const session = this.activeSession(sessionId);
    this.refuseWhileDisabled();
    session.sendText(text, messageType);
  }

  sendAudio(sessionId: string, opus: Uint8Array): AudioSent {
    const session = this.activeSession(sessionId);
    const sent = session.sendAudio(opus);
    // Its packet count survives a crash as device telemetry does: written at the next timed flush.
    if (this.ownedByItsDevice(session)) this.deps.sessions.saveLater(session.id, session.latestRecord);
    return sent;
  }

  /**
   * `listener` (a device's connection, by an id of the caller's choosing) now receives the session's
   * events: a session that was waiting for its device to come back goes on. False when the session is
   * not active (it ended meanwhile): nothing is recorded then.
   */
  attach(sessionId: string, listener: string): boolean {
    if (this.live.get(sessionId)?.state !== 'Active') return false;
    this.presence.attach(sessionId, listener);
    return true;
  }

  /**
   * `listener` is gone (its connection closed). A session it had joined that nobody else listens to
   * keeps its upstream link and waits `deviceReconnectGraceMs` for a listener to attach again; then it ends.
   */
  release(listener: string): void {
    // On shutdown the hub closes every connection in the same turn, just before shutdown() ends the
    // sessions: looked at a microtask later, those are not devices to wait for.
    queueMicrotask(() => {
      if (!this.shuttingDown) this.presence.release(listener);
    });
  }

  /** The live record of an active session, else the stored one. */
  get(sessionId: string): SessionRecord | undefined {
    return this.live.get(sessionId)?.snapshot() ?? this.unsavedEnds.get(sessionId) ?? this.deps.sessions.get(sessionId);
  }

  /** Sessions currently Starting or Active. */
  list(): SessionRecord[] {
    return [...this.live.values()].map((s) => s.snapshot());
  }

  /**
   * The device was deleted: its sessions end, and their records, deleted with it, are not written back
   * (a device registered again under its id is another device, which must find none of them).
   */
  async stopAllForDevice(deviceId: string): Promise<void> {
    const sessions = [...this.live.values()].filter((s) => s.deviceId === deviceId);
    this.unsavedEnds.forgetDevice(deviceId);
    await Promise.all(sessions.map((s) => s.stop('device deleted')));
  }

  /** Stops every session (recorded as ended) and refuses new ones. Idempotent. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.all([...this.live.values()].map((s) => s.stop('service shutdown')));
    this.startFailures.flush();
    this.invalidFrames.flush();
    this.dropBursts.flush();
    this.reconnects.flush();
    this.presenceLines.flush();
    this.sessionLines.flush();
    await this.unsavedEnds.retry();
    this.unsavedEnds.close();
    // Only once every session has freed its decoder: the threads go last.
    await this.decoders.close();
  }

  /**
   * Writes the session's record while its device is still the one it was started for. A deletion removes
   * the device's session records with it (the store does, in the same write); written after that, they
   * came back, to be read, stopped and joined with the tokens of a device registered again under the id.
   */
  private save(session: VoiceSession, durable = false): Promise<void> {
    const write = (): Promise<void> => (this.ownedByItsDevice(session) ? this.deps.sessions.save(session.snapshot(), durable) : Promise.resolve());
    // While a deletion of its device is being written, the device's absence says nothing yet: see ownedOnceDecided.
    const deletion = this.deps.deletionWritten?.(session.deviceId);
    return deletion ? deletion.then(write) : write();
  }

  /**
   * Whether the session is its device's, once a deletion of the device being written has been taken or
   * refused by the disk. Judged from the device's absence meanwhile, a session that ended then wrote no
   * final record; the disk refusing the deletion gave the device back with the session's record as it was
   * before, Active: a stop answered 200 with `state: Active`, a message 409 "not active (Active)", and
   * JoinSession sent SessionJoined for a session that had ended, until a restart ended it a second time.
   */
  private async ownedOnceDecided(session: VoiceSession): Promise<boolean> {
    await this.deps.deletionWritten?.(session.deviceId);
    return this.ownedByItsDevice(session);
  }

  private ownedByItsDevice(session: VoiceSession): boolean {
    try {
      return this.deps.deviceGeneration(session.deviceId) === session.deviceGeneration;
    } catch {
      return true; // the store is closed: the write goes on to refuse (or drop) itself as it always did
    }
  }

  /** Refuses a start once the service is shutting down or its device is gone (deleted meanwhile, even if registered again). */
  private refuseGoneStart(deviceId: string, generation: number): void {
    if (this.shuttingDown) throw new DomainError('unavailable', 'the service is shutting down');
    if (this.deps.deviceGeneration(deviceId) !== generation) throw deviceNotFound(deviceId);
  }

  /**
   * Voice switched off refuses new voice work from HTTP: starts and text messages. It ends no session
   * (stopping one is always allowed), and the audio of a session that is still running goes on.
   */
  private refuseWhileDisabled(): void {
    if (!this.deps.config.enableVoice()) {
      throw new DomainError('unavailable', 'voice features are disabled (VoiceService.EnableVoice is false)');
    }
  }

  private activeSession(sessionId: string): VoiceSession {
    const session = this.live.get(sessionId);
    if (session) return session; // VoiceSession refuses with 'conflict' unless Active
    const stored = this.get(sessionId);
    if (!stored) throw sessionNotFound(sessionId);
    throw new DomainError('conflict', `session '${sessionId}' is not active (${stored.state})`);
  }

  private deviceAway(sessionId: string, graceMs: number): void {
    const session = this.live.get(sessionId);
    if (session?.state !== 'Active') return; // ending anyway
    this.presenceLines.info(`session ${sessionId}: device ${session.deviceId} lost its connection; the session waits ${durationText(graceMs)} for it to rejoin`);
    this.listeners.emit({ type: 'deviceAway', sessionId, deviceId: session.deviceId, graceMs, at: this.now() });
  }

  private deviceReturned(sessionId: string, awayMs: number): void {
    const session = this.live.get(sessionId);
    if (!session) return;
    this.presenceLines.info(`session ${sessionId}: device ${session.deviceId} rejoined after ${durationText(awayMs)}`);
    this.listeners.emit({ type: 'deviceReturned', sessionId, deviceId: session.deviceId, awayMs, at: this.now() });
  }

  private async ended(session: VoiceSession): Promise<void> {
    this.presence.forget(session.id);
    this.live.delete(session.id);
    if (this.byDevice.get(session.deviceId) === session) this.byDevice.delete(session.deviceId);
    const record = session.snapshot();
    if (!(await this.ownedOnceDecided(session))) return;
    try {
      // On disk at once, as the start was: an ended session must not come back as running (or unknown) after a crash.
      await this.deps.sessions.save(record, true);
    } catch (e) {
      this.deps.logger.error(`session ${session.id}: saving the final record failed (kept, and written when storage recovers): ${errorText(e)}`);
      this.unsavedEnds.hold(record);
    }
  }

  /** Validates `sessionConfig` over the defaults of the `voice` category; `opus` is the only format. */
  private sessionConfig(input: StartRequest['sessionConfig']): Omit<SessionRecord['config'], 'serverUrl'> {
    const defaults = this.deps.voiceDefaults();
    const given = input ?? {};
    const fields: Record<string, string[]> = {};
    const audioFormat = given.audioFormat ?? 'opus';
    if (audioFormat !== 'opus') fields['sessionConfig.audioFormat'] = ["must be 'opus'"];
    const sampleRate = given.sampleRate ?? defaults.sampleRate;
    if (!isOpusSampleRate(sampleRate)) fields['sessionConfig.sampleRate'] = [`must be one of ${OPUS_SAMPLE_RATES.join(', ')}`];
    const channels = given.channels ?? defaults.channels;
    if (channels !== 1 && channels !== 2) fields['sessionConfig.channels'] = ['must be 1 or 2'];
    const autoMode = given.autoMode ?? false;
    if (typeof autoMode !== 'boolean') fields['sessionConfig.autoMode'] = ['must be a boolean'];
    const problems = Object.entries(fields);
    if (problems.length > 0) {
      const detail = problems.map(([k, v]) => `${k} ${v.join('; ')}`).join(', ');
      throw new DomainError('invalid_argument', `invalid sessionConfig: ${detail}`, fields);
    }
    return { audioFormat, sampleRate, channels, autoMode };
  }
}

/** A session no start made, or one the history no longer holds: the API's 404, the hub's completion error. */
export function sessionNotFound(sessionId: string): DomainError {
  return new DomainError('not_found', `session '${sessionId}' does not exist`);
}
