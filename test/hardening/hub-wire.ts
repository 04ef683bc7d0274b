// A raw hub client on `ws` for the hardening tests: the SignalR handshake (JSON or MessagePack, no
// negotiate), invocations with and without an id, and a decoded log of everything the server sent,
// so tests can also send what no official client would and still read the answers.
import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';
import { writeBinaryMessage } from '../../src/hub/binary-format.js';
import { withTimeout } from '../support/wait.js';

export type Protocol = 'json' | 'messagepack';

/** What the server sent, in one shape for both protocols. */
export interface WireMessage {
  type: number;
  target?: string;
  arguments?: unknown[];
  invocationId?: string;
  error?: string;
  result?: unknown;
  allowReconnect?: boolean;
}

/** One MessagePack hub message with its length prefix. */
export function msgpackFrame(items: unknown): Uint8Array {
  return writeBinaryMessage(encode(items));
}

export const jsonFrame = (obj: unknown): string => JSON.stringify(obj) + '\u001e';

function fromMsgpack(items: unknown): WireMessage | undefined {
  if (!Array.isArray(items)) return undefined;
  const type = items[0] as number;
  switch (type) {
    case 1:
      return { type, invocationId: items[2] ?? undefined, target: items[3], arguments: items[4] };
    case 3:
      return { type, invocationId: items[2], ...(items[3] === 1 ? { error: items[4] } : { result: items[4] }) };
    case 7:
      return { type, error: items[1] ?? undefined, ...(items.length > 2 ? { allowReconnect: items[2] } : {}) };
    default:
      return { type };
  }
}

export class HubWire {
  readonly messages: WireMessage[] = [];
  /** Frames from the server that did not parse: the server must never send one. */
  readonly errors: string[] = [];
  /** Bytes received after the handshake. */
  bytesReceived = 0;
  readonly closed: Promise<{ code: number; reason: string }>;
  private nextId = 0;
  private pending = Buffer.alloc(0);

  private constructor(readonly ws: WebSocket, readonly protocol: Protocol) {
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Connects to `${baseUrl}/voice-hub` and completes the handshake. */
  /** `localAddress`: the loopback address to connect from (127.0.0.2 ...), which the hub's per-address limits key on. */
  static async connect(baseUrl: string, protocol: Protocol = 'json', { localAddress }: { localAddress?: string } = {}): Promise<HubWire> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/voice-hub`, { perMessageDeflate: false, localAddress });
    ws.on('error', () => {}); // a refused or reset socket shows as `closed`
    const wire = new HubWire(ws, protocol);
    await withTimeout(new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
      ws.once('close', () => reject(new Error('closed before open')));
    }), 5000, 'hub connect');
    const answer = withTimeout(new Promise<string>((resolve) => ws.once('message', (data: Buffer) => resolve(data.toString()))), 5000, 'handshake answer');
    ws.send(`{"protocol":"${protocol}","version":1}\u001e`);
    const text = await answer;
    if (text !== '{}\u001e') throw new Error(`handshake refused: ${text}`);
    ws.on('message', (data: Buffer) => wire.receive(data));
    return wire;
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  private receive(data: Buffer): void {
    try {
      this.parse(data);
    } catch (e) {
      this.errors.push(`${e instanceof Error ? e.message : String(e)}: ${data.toString('latin1').slice(0, 200)}`);
    }
  }

  private parse(data: Buffer): void {
    this.bytesReceived += data.length;
    if (this.protocol === 'json') {
      for (const record of data.toString('utf8').split('\u001e')) {
        if (record) this.messages.push(JSON.parse(record) as WireMessage);
      }
      return;
    }
    let buf = this.pending.length ? Buffer.concat([this.pending, data]) : data;
    for (;;) {
      let len = 0;
      let i = 0;
      for (; i < 5 && i < buf.length; i++) {
        len += (buf[i]! & 0x7f) * 2 ** (7 * i);
        if ((buf[i]! & 0x80) === 0) break;
      }
      if (i >= buf.length || i + 1 + len > buf.length) break;
      const message = fromMsgpack(decode(buf.subarray(i + 1, i + 1 + len)));
      if (message) this.messages.push(message);
      buf = buf.subarray(i + 1 + len);
    }
    this.pending = Buffer.from(buf);
  }

  sendRaw(data: string | Uint8Array): void {
    if (this.open) this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /** The encoded invocation, for tests that batch many into one frame. */
  encodeInvocation(target: string, args: unknown[], invocationId?: string): string | Uint8Array {
    return this.protocol === 'json'
      ? jsonFrame({ type: 1, ...(invocationId ? { invocationId } : {}), target, arguments: args })
      : msgpackFrame([1, {}, invocationId ?? null, target, args]);
  }

  /** A non-blocking invocation (no completion). */
  send(target: string, args: unknown[]): void {
    this.sendRaw(this.encodeInvocation(target, args));
  }

  /** An invocation with an id; resolves with its completion. */
  async invoke(target: string, args: unknown[], timeoutMs = 5000): Promise<WireMessage> {
    const id = String(++this.nextId);
    this.sendRaw(this.encodeInvocation(target, args, id));
    return this.waitFor((m) => m.type === 3 && m.invocationId === id, timeoutMs, `completion of ${target}`);
  }

  /** Arguments of every invocation of `target` the server sent. */
  of(target: string): unknown[][] {
    return this.messages.filter((m) => m.type === 1 && m.target === target).map((m) => m.arguments ?? []);
  }

  /** The first message (from the start) that matches; rejects after `timeoutMs` or when the socket closes. */
  async waitFor(match: (m: WireMessage) => boolean, timeoutMs: number, what: string): Promise<WireMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Joins a session group and waits for `SessionJoined`. */
  async join(sessionId: string, token: string): Promise<void> {
    await this.invoke('JoinSession', [sessionId, token]);
    const errors = this.of('Error');
    if (errors.length > 0) throw new Error(`JoinSession refused: ${JSON.stringify(errors)}`);
    await this.waitFor((m) => m.target === 'SessionJoined' && m.arguments?.[0] === sessionId, 5000, 'SessionJoined');
  }

  close(): void {
    this.ws.terminate();
  }
}
