// A voice server the test controls (VoiceService.ServerUrl points at it): it records what the
// service sends, knows which socket serves which session (from its `start` frame), and lets a test
// send anything back, close or cut a socket, or stop reading one (upstream back-pressure).
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { startDaemon, startSession, type Daemon, type StartedSession } from './daemon.js';
import { sleep } from '../support/wait.js';

export interface ServiceFrame {
  type?: string;
  sessionId?: string;
  sequence?: number;
  text?: string;
}

export class FakeUpstream {
  /** Connections accepted so far (reconnects included). */
  connections = 0;
  readonly received: ServiceFrame[] = [];
  private readonly bySession = new Map<string, WebSocket>();
  /** Called for each new connection before any frame is read (e.g. to pause it). */
  onConnection: ((socket: WebSocket) => void) | undefined;

  private constructor(private readonly wss: WebSocketServer) {
    wss.on('connection', (socket) => {
      this.connections++;
      socket.on('error', () => {});
      socket.on('message', (data, isBinary) => {
        if (isBinary) return;
        let frame: ServiceFrame;
        try {
          frame = JSON.parse(data.toString()) as ServiceFrame;
        } catch {
          return;
        }
        this.received.push(frame);
        if (frame.type === 'start' && frame.sessionId) this.bySession.set(frame.sessionId, socket);
      });
      this.onConnection?.(socket);
    });
  }

  static async start(): Promise<FakeUpstream> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 4 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    return new FakeUpstream(wss);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}/voice`;
  }

  /** The open socket that last sent `start` for this session. */
  socketFor(sessionId: string): WebSocket | undefined {
    const socket = this.bySession.get(sessionId);
    return socket && socket.readyState === socket.OPEN ? socket : undefined;
  }

  /** Waits (bounded) for an open socket of the session whose `start` arrived after `connectionsBefore`. */
  async reconnected(sessionId: string, connectionsBefore: number, timeoutMs = 5000): Promise<WebSocket> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const socket = this.socketFor(sessionId);
      if (socket && this.connections > connectionsBefore) return socket;
      if (Date.now() > deadline) throw new Error(`session ${sessionId} did not reconnect upstream within ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  /** Frames of one type the service sent for a session. */
  of(type: string, sessionId?: string): ServiceFrame[] {
    return this.received.filter((f) => f.type === type && (sessionId === undefined || f.sessionId === sessionId));
  }

  close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    return new Promise((resolve) => this.wss.close(() => resolve()));
  }
}

/** The built bundle with a FakeUpstream as its voice server, and one session started through it. */
export interface UpstreamRig {
  readonly upstream: FakeUpstream;
  readonly daemon: Daemon;
  readonly session: StartedSession;
  stop(): Promise<void>;
}

/** `settings` are merged into the daemon's configuration (ServerUrl always points at the fake upstream). */
export async function startUpstreamRig(sessionConfig: Record<string, unknown> = {}, settings: Record<string, unknown> = {}): Promise<UpstreamRig> {
  const upstream = await FakeUpstream.start();
  const voice = (settings.VoiceService ?? {}) as Record<string, unknown>;
  const daemon = await startDaemon({ settings: { ...settings, VoiceService: { ...voice, ServerUrl: upstream.url } } });
  const session = await startSession(daemon.url, sessionConfig);
  return {
    upstream,
    daemon,
    session,
    stop: async () => {
      await daemon.stop();
      await upstream.close();
    },
  };
}
