// One WebSocket per voice session to the upstream voice server: connect within a deadline and send
// `start`; send audio/text; reconnect after an
// unexpected drop within a failure budget (reconnect-budget.ts), so that an upstream that keeps dropping
// ends the session instead of being retried forever; keep memory bounded when upstream is slow; `stop`
// then close 1000 at the end. Audio that devices send while the link reconnects is refused (the sender
// gets an Error at once) and counted, not buffered: a fresh upstream connection starts a new `start`, and
// replaying stale speech into it would be worse than telling the device.
import type WebSocket from 'ws';
import { DomainError, connectionErrorText, errorText } from '../errors.js';
import { durationText } from '../log/duration.js';
import type { Logger } from '../log/logger.js';
import type { ThrottledLog } from '../log/throttled.js';
import { ReconnectBudget, type ReconnectPolicy } from './reconnect-budget.js';
import { UpstreamFrameWriter } from './frame-writer.js';
import { MAX_FRAGMENTS, watchFragments } from './fragment-limit.js';
import { ReadGate } from './read-gate.js';
import { limitCloseWait } from './close-wait.js';
import { LIVENESS_INTERVAL_MS, watchLiveness } from './liveness.js';
import { loadWebSocket, refusedUpgradeText, upstreamClientOptions, upstreamTarget } from './websocket.js';
import { SecretScrubber } from './secret-scrubber.js';
import { withHiddenEscaped } from '../hidden-characters.js';
import {
  encodeAudio, encodeStart, encodeStop, encodeText, parseUpstreamMessage,
  type SessionStartInfo, type UpstreamMessage,
} from './protocol.js';
import { monotonicMs } from '../monotonic-clock.js';

export type LinkState = 'Idle' | 'Connecting' | 'Open' | 'Reconnecting' | 'Closed' | 'Failed';

export interface UpstreamLinkOptions {
  url: string;
  /** Sent as `Authorization: Bearer <apiKey>`; no header when empty. */
  apiKey: string;
  connectTimeoutMs: number;
  start: SessionStartInfo;
  logger: Logger;
  onMessage: (message: UpstreamMessage) => void;
  /** Called once when the link is lost for good (reconnects exhausted). Not called after close(). */
  onFailed: (reason: string) => void;
  /** Called when an open link drops and starts reconnecting, and when a reconnect opens it again. */
  onStateChange?: (state: 'Reconnecting' | 'Open') => void;
  /** Extra CA certificates for `wss://` servers with a private CA. */
  ca?: Buffer;
  /** Audio is refused while more than this many bytes wait in the socket (default 256 KiB). */
  maxBufferedBytes?: number;
  /** The reconnect budget (VoiceService.Reconnect*). */
  reconnect: ReconnectPolicy;
  /** Largest message accepted from upstream (default UPSTREAM_MAX_MESSAGE_BYTES). */
  maxFrameBytes?: number;
  /**
   * Where the lines about ignored frames go, shared by every session's link: each link writes at most
   * INVALID_LOGS_PER_SECOND, so without a shared bound many sessions of one bad server still flood the log.
   */
  invalidFrameLog?: Pick<ThrottledLog, 'warn'>;
  /**
   * Where the lines about a lost connection and its reconnects go (not the one that gives up), shared by
   * the sessions: a voice server restart writes three lines per session at once, and a server that drops
   * each connection just after it counts as stable does so again every ReconnectStableAfter, for ever.
   */
  reconnectLog?: Pick<ThrottledLog, 'warn' | 'info'>;
  /** A ping after this long without a byte from upstream, and the connection dropped after as long again (default LIVENESS_INTERVAL_MS). */
  livenessIntervalMs?: number;
}

export interface LinkStats {
  framesSent: number;
  framesReceived: number;
  invalidFrames: number;
  droppedAudio: number;
  reconnects: number;
  /** Reconnect attempts that failed: could not connect, or dropped before proving stable. */
  failedReconnects: number;
  /** Pings from upstream left unanswered because it was not reading what we had already sent. */
  unansweredPings: number;
}

const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024;
/** How long a closing connection waits for the server to end it (our close, or the server's). */
const CLOSE_GRACE_MS = 1000;
/** Invalid frames logged per second at most; the rest are only counted. */
const INVALID_LOGS_PER_SECOND = 3;
/**
 * A pong is written only while at most this much waits for the server. `ws` answers every ping
 * whatever waits, so a server that pings without reading made the answers pile up without bound: 7 MB
 * of empty pings left 18 MB of pongs queued and 450 MB of heap. RFC 6455 5.5.3 lets an endpoint
 * answer only the latest pings; a server that reads again gets the next one answered.
 */
const PONG_BUFFER_LIMIT = 16 * 1024;
const noop = (): void => {};
/** Why a frame was ignored, as logged: longer reasons quote upstream at length (an unknown type). */
const MAX_REASON_CHARS = 120;

export class UpstreamVoiceLink {
  readonly stats: LinkStats = { framesSent: 0, framesReceived: 0, invalidFrames: 0, droppedAudio: 0, reconnects: 0, failedReconnects: 0, unansweredPings: 0 };
  private stateValue: LinkState = 'Idle';
  private socket: WebSocket | undefined;
  /** Writes `socket`'s audio and text frames, a turn's frames in one write. */
  private writer: UpstreamFrameWriter | undefined;
  /** Aborts the connection attempt in progress, if any. */
  private abortAttempt: ((reason: string) => void) | undefined;
  /** Ends the wait before the next reconnect attempt early. */
  private wakeRetry: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private invalidWindowStart = 0;
  private invalidLogged = 0;
  private invalidSuppressed = 0;
  private readonly budget: ReconnectBudget;
  /** When the current socket opened, and whether it came from a reconnect attempt (then it is on trial). */
  private openedAt = 0;
  private onTrial = false;
  /** Audio refused because the connection was down or closing, since the last outage was logged. */
  private refusedWhileDown = 0;
  /** Frames a paused socket still handed on, until reading resumes; paused while pauseReading(true) is in force. */
  private readonly gate = new ReadGate<WebSocket.RawData>((data, isBinary) => this.receive(data, isBinary));
  /** The current connection's unanswered pings have been logged (once per connection). */
  private unansweredLogged = false;

  private readonly scrub: SecretScrubber;

  constructor(private readonly options: UpstreamLinkOptions) {
    this.budget = new ReconnectBudget(options.reconnect);
    this.scrub = new SecretScrubber(options.apiKey, options.url);
  }

  get state(): LinkState { return this.stateValue; }

  /**
   * Stops (true) or resumes reading frames from upstream: TCP then holds the server back while the
   * session's decoding is behind. No frame is handed on while paused, not even the rest of a read in
   * progress (read-gate.ts). Kept across reconnects.
   */
  pauseReading(paused: boolean): void {
    if (paused) {
      this.gate.pause();
      this.socket?.pause();
    } else if (this.gate.resume()) {
      this.socket?.resume();
    }
  }

  /** Bytes queued in the socket, not yet handed to the network. */
  get bufferedAmount(): number { return (this.socket?.bufferedAmount ?? 0) + (this.writer?.pendingBytes ?? 0); }

  /** Resolves once the socket is open and `start` has been sent; rejects within connectTimeoutMs. */
  async connect(): Promise<void> {
    if (this.stateValue !== 'Idle') throw new Error(`connect() in state ${this.stateValue}`);
    this.stateValue = 'Connecting';
    try {
      const { socket, writer } = await this.open();
      if (this.stateValue !== 'Connecting') {
        socket.terminate();
        throw new Error('link closed while connecting');
      }
      this.socket = socket;
      this.writer = writer;
      this.stateValue = 'Open';
      this.openedAt = monotonicMs();
    } catch (e) {
      if (this.stateValue === 'Connecting') this.stateValue = 'Failed';
      throw e;
    }
  }

  /** Sends one Opus packet; throws DomainError('unavailable') when the link cannot take it now. */
  sendAudio(sequence: number, packet: Uint8Array, sampleRate: number, channels: number): void {
    this.send(this.writable('audio'), encodeAudio(this.options.start.sessionId, sequence, packet, sampleRate, channels));
  }

  sendText(text: string, messageType: string): void {
    this.send(this.writable('text'), encodeText(this.options.start.sessionId, text, messageType));
  }

  /** Sends `stop` and closes with 1000. Idempotent; resolves once the socket is gone. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.stateValue = 'Closed';
    this.abortAttempt?.('link closed while connecting');
    this.wakeRetry?.();
    const socket = this.socket;
    this.socket = undefined;
    // What this turn sent goes before `stop`.
    this.writer?.flush();
    this.writer = undefined;
    // A paused socket would not read the server's close frame. What it reads now is not delivered.
    this.gate.close();
    socket?.resume();
    this.closing = socket ? closeGracefully(socket, encodeStop(this.options.start.sessionId)) : Promise.resolve();
    return this.closing;
  }

  private writable(what: 'audio' | 'text'): UpstreamFrameWriter {
    const { socket, writer } = this;
    if (this.stateValue !== 'Open' || !socket || !writer || socket.readyState !== socket.OPEN) {
      if (what === 'audio') {
        this.stats.droppedAudio++;
        this.refusedWhileDown++;
      }
      // Between the socket dying and its close event the link still says Open; the socket knows better.
      const state = this.stateValue === 'Open' ? 'closing' : this.stateValue.toLowerCase();
      throw new DomainError('unavailable', `upstream connection is ${state}: ${what} dropped`);
    }
    // Past this the socket would buffer without bound while upstream (or the network) is slow.
    if (this.bufferedAmount > (this.options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES)) {
      if (what === 'audio') this.stats.droppedAudio++;
      throw new DomainError('unavailable', `upstream is not keeping up: ${what} dropped`);
    }
    return writer;
  }

  private send(writer: UpstreamFrameWriter, frame: string): void {
    writer.send(frame);
    this.stats.framesSent++;
  }

  /** One connection attempt: open, send `start`, hand back the socket; or reject with a readable reason. */
  private async open(): Promise<{ socket: WebSocket; writer: UpstreamFrameWriter }> {
    const WebSocketClient = await loadWebSocket();
    // close() while ws loaded found no attempt to abort yet.
    if (this.stateValue === 'Closed') throw new Error('link closed while connecting');
    const { url, apiKey, connectTimeoutMs, ca, maxFrameBytes } = this.options;
    return new Promise((resolve, reject) => {
      let socket: WebSocket;
      let address: string;
      try {
        const target = upstreamTarget(url, apiKey);
        address = target.address;
        socket = new WebSocketClient(address, { ...upstreamClientOptions(target.authorization, ca, maxFrameBytes, target.zoned), autoPong: false });
      } catch (e) {
        reject(new Error(`invalid upstream URL: ${errorText(e)}`));
        return;
      }
      const timer = setTimeout(() => fail(`timed out after ${durationText(connectTimeoutMs)}`), connectTimeoutMs);
      const settle = (): void => {
        clearTimeout(timer);
        this.abortAttempt = undefined;
        socket.removeAllListeners();
      };
      const fail = (reason: string): void => {
        settle();
        socket.on('error', () => {}); // terminate() may still report the aborted handshake
        socket.terminate();
        reject(new Error(reason));
      };
      this.abortAttempt = fail;
      socket.once('error', (err) => fail(connectionErrorText(err)));
      // Listened to, ws leaves the refused handshake to us: fail() ends it.
      socket.once('unexpected-response', (_request, response) => fail(refusedUpgradeText(response, address)));
      socket.once('close', (code) => fail(`closed during the handshake (${code})`));
      socket.once('open', () => {
        // The handshake's listeners go first: what is added below stays for the connection's life.
        settle();
        let writer: UpstreamFrameWriter;
        try {
          writer = new UpstreamFrameWriter(socket);
          watchFragments(socket, () => {
            // Reported through the socket's error listener (attach), which names it in the drop's cause.
            socket.emit('error', new Error(`a message came in more than ${MAX_FRAGMENTS} fragments`));
            socket.terminate();
          });
          limitCloseWait(socket, CLOSE_GRACE_MS);
          watchLiveness(socket, this.options.livenessIntervalMs ?? LIVENESS_INTERVAL_MS, () => !this.gate.isPaused, (silentMs) => {
            socket.emit('error', new Error(`nothing from the server for ${durationText(silentMs)}, not even the answer to a ping`));
            socket.terminate();
          });
        } catch (e) {
          fail(errorText(e));
          return;
        }
        this.attach(socket);
        socket.send(encodeStart(this.options.start));
        this.stats.framesSent++;
        resolve({ socket, writer });
      });
    });
  }

  private attach(socket: WebSocket): void {
    if (this.gate.isPaused) socket.pause();
    this.unansweredLogged = false;
    socket.on('ping', (data) => this.answerPing(socket, data));
    socket.on('message', (data, isBinary) => this.gate.offer(data, isBinary));
    // ws ends a connection whose server broke the protocol (a frame over maxPayload, a bad opcode or
    // UTF-8) with an error and then a close that only says 1006: the error is what happened.
    let failure: string | undefined;
    socket.on('error', (err) => {
      failure ??= connectionErrorText(err);
      this.options.logger.debug(`upstream socket error: ${errorText(err)}`);
    });
    socket.on('close', (code, reason) => this.dropped(socket, code, reason.toString('utf8'), failure));
  }

  private answerPing(socket: WebSocket, data: Buffer): void {
    if (socket.bufferedAmount <= PONG_BUFFER_LIMIT) {
      socket.pong(data, true, noop);
      return;
    }
    this.stats.unansweredPings++;
    if (this.unansweredLogged || socket !== this.socket) return;
    this.unansweredLogged = true;
    this.options.logger.warn(
      `session ${this.sessionId}: the upstream server pings but does not read what it is sent ` +
        `(more than ${PONG_BUFFER_LIMIT} bytes wait for it): its pings go unanswered until it reads again`,
    );
  }

  private receive(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) return this.invalid('binary frame');
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    const message = parseUpstreamMessage(bytes.toString('utf8'));
    if (message.kind === 'invalid') return this.invalid(message.reason);
    this.stats.framesReceived++;
    try {
      this.options.onMessage(this.scrub.message(message));
    } catch (e) {
      this.options.logger.error(`handling upstream ${message.kind} failed: ${errorText(e)}`);
    }
  }

  /** Counted always; logged a few times per second at most so a misbehaving server cannot flood the journal. */
  private invalid(reason: string): void {
    this.stats.invalidFrames++;
    const now = monotonicMs();
    if (now - this.invalidWindowStart >= 1000) {
      this.invalidWindowStart = now;
      this.invalidLogged = 0;
    }
    if (this.invalidLogged >= INVALID_LOGS_PER_SECOND) {
      this.invalidSuppressed++;
      return;
    }
    this.invalidLogged++;
    const more = this.invalidSuppressed > 0 ? ` (${this.invalidSuppressed} more not logged)` : '';
    this.invalidSuppressed = 0;
    const text = this.scrub.text(reason);
    const clipped = text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS)}...` : text;
    (this.options.invalidFrameLog ?? this.options.logger).warn(
      `session ${this.options.start.sessionId}: ignored upstream frame: ${clipped}; ${this.stats.invalidFrames} so far${more}`,
    );
  }

  private dropped(socket: WebSocket, code: number, reason: string, failure: string | undefined): void {
    if (socket !== this.socket || this.stateValue !== 'Open') return;
    this.socket = undefined;
    this.writer?.discard();
    this.writer = undefined;
    this.stateValue = 'Reconnecting';
    const now = monotonicMs();
    const upMs = now - this.openedAt;
    const cause = `closed with ${code}${reason ? ` ${withHiddenEscaped(this.scrub.closeReason(reason))}` : ''}${failure ? `: ${failure}` : ''}`;
    const { attempts, stableAfterMs } = this.budget.policy;
    let last = cause;
    if (this.onTrial && !this.budget.isStable(upMs)) {
      // It opened, but did not stay up long enough to count as a success: the attempt failed.
      this.budget.fail(now);
      this.stats.failedReconnects++;
      last = `the reconnected connection ${cause} after ${durationText(upMs)}, before it had been up ${durationText(stableAfterMs)}`;
      this.reconnectLog.warn(
        `session ${this.sessionId}: upstream connection lost (${cause}) after ${durationText(upMs)}: ` +
          `the reconnect did not prove stable, failure ${this.budget.failuresAt(now)} of ${attempts}`,
      );
    } else {
      // Up for good (or the first connection): a new outage, whose failures are counted from none.
      this.budget.outageOver();
      this.reconnectLog.warn(`session ${this.sessionId}: upstream connection lost (${cause}) after ${durationText(upMs)}; reconnecting`);
    }
    this.onTrial = false;
    this.options.onStateChange?.('Reconnecting');
    void this.reconnect(cause, last);
  }

  private get sessionId(): string { return this.options.start.sessionId; }

  private get reconnectLog(): Pick<ThrottledLog, 'warn' | 'info'> { return this.options.reconnectLog ?? this.options.logger; }

  /** Attempts within the budget, each after its back-off; Failed (and onFailed) once the budget is spent. */
  private async reconnect(cause: string, lastFailure: string): Promise<void> {
    const { attempts, windowMs } = this.budget.policy;
    let last = lastFailure;
    for (let next = this.budget.next(monotonicMs()); next; next = this.budget.next(monotonicMs())) {
      const { attempt, delayMs } = next;
      this.reconnectLog.info(`session ${this.sessionId}: reconnect attempt ${attempt} of ${attempts} in ${durationText(delayMs)}`);
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, delayMs);
        this.wakeRetry = () => { clearTimeout(timer); wake(); };
      });
      this.wakeRetry = undefined;
      if (this.stateValue !== 'Reconnecting') return;
      try {
        const { socket, writer } = await this.open();
        if (this.stateValue !== 'Reconnecting') {
          socket.terminate();
          return;
        }
        this.socket = socket;
        this.writer = writer;
        this.stateValue = 'Open';
        this.openedAt = monotonicMs();
        this.onTrial = true;
        this.stats.reconnects++;
        this.reconnectLog.info(`session ${this.sessionId}: upstream reconnected (attempt ${attempt} of ${attempts})${this.refusedDuringOutage()}`);
        this.options.onStateChange?.('Open');
        return;
      } catch (e) {
        if (this.stateValue !== 'Reconnecting') return;
        last = errorText(e);
        this.budget.fail(monotonicMs());
        this.stats.failedReconnects++;
        this.reconnectLog.warn(`session ${this.sessionId}: reconnect attempt ${attempt} of ${attempts} failed: ${last}`);
      }
    }
    this.stateValue = 'Failed';
    const spent = attempts === 0
      ? 'reconnecting is switched off'
      : `${attempts === 1 ? '1 reconnect attempt' : `${attempts} reconnect attempts`} failed: ${last} (${this.budget.windowHolds(monotonicMs()) ? `within ${durationText(windowMs)}` : 'in a row'})`;
    this.options.logger.warn(`session ${this.sessionId}: giving up on the upstream${this.refusedDuringOutage()}`);
    this.options.onFailed(`upstream connection lost (${cause}); ${spent}`);
  }

  /** How much device audio the outage cost, for the log line that ends it. */
  private refusedDuringOutage(): string {
    const refused = this.refusedWhileDown;
    this.refusedWhileDown = 0;
    return refused > 0 ? `; ${refused} audio packets from devices were refused meanwhile (${this.stats.droppedAudio} in this session)` : '';
  }
}

/** `stop`, then a 1000 close; a peer that does not answer the close is cut off after a grace period. */
function closeGracefully(socket: WebSocket, stopFrame: string): Promise<void> {
  return new Promise((resolve) => {
    if (socket.readyState === socket.CLOSED) return resolve();
    const timer = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    if (socket.readyState === socket.OPEN) {
      try {
        socket.send(stopFrame);
        socket.close(1000, 'session ended');
      } catch {
        socket.terminate();
      }
    } else {
      socket.terminate();
    }
  });
}
