// A hub client that parses what the server sends as strictly as the strictest clients in use do
// (Python's signalrcore indexes MessagePack arrays by position): negotiate, the WebSocket, the handshake,
// and every message checked against the exact shape ASP.NET Core writes. MessagePack arrays must have the
// exact length for their type (Invocation 6, StreamItem 4, Completion 4 or 5, Ping 1, Close 3); JSON
// messages must carry their required properties with the right types. Anything else is recorded as a
// violation, which tests assert to be empty. Written apart from the service's own protocol code on purpose.
import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';
import { withTimeout } from './wait.js';

export type StrictProtocol = 'json' | 'messagepack';

export interface StrictInvocation {
  readonly target: string;
  readonly arguments: unknown[];
}

const RS = '\u001e';

/** ASP.NET Core's MessagePack array length per message type; Completion is 4 (void) or 5. */
const MSGPACK_LENGTHS: Readonly<Record<number, readonly number[]>> = { 1: [6], 2: [4], 3: [4, 5], 4: [6], 5: [3], 6: [1], 7: [3] };

export class StrictHubClient {
  /** Every invocation the server sent, in order. */
  readonly invocations: StrictInvocation[] = [];
  /** Completions by invocation id. */
  readonly completions = new Map<string, { error?: string; result?: unknown }>();
  /** What the server sent that a strict client could not read. Must stay empty. */
  readonly violations: string[] = [];
  private handshakeDone = false;
  private buffer = Buffer.alloc(0);
  private nextId = 0;
  private waiters: Array<() => void> = [];

  private constructor(private readonly ws: WebSocket, readonly protocol: StrictProtocol) {
    ws.on('message', (data: Buffer, isBinary: boolean) => this.receive(data, isBinary));
  }

  /** Negotiates (version 1), opens the WebSocket with the connection token and completes the handshake. */
  static async connect(baseUrl: string, hubPath: string, protocol: StrictProtocol): Promise<StrictHubClient> {
    const negotiated = await fetch(`${baseUrl}${hubPath}/negotiate?negotiateVersion=1`, { method: 'POST', signal: AbortSignal.timeout(5000) });
    if (negotiated.status !== 200) throw new Error(`negotiate: ${negotiated.status}`);
    const body = (await negotiated.json()) as { connectionToken?: unknown; availableTransports?: Array<{ transport: string; transferFormats: string[] }> };
    if (typeof body.connectionToken !== 'string') throw new Error('negotiate: no connectionToken');
    const ws = body.availableTransports?.find((t) => t.transport === 'WebSockets');
    if (!ws?.transferFormats.includes(protocol === 'json' ? 'Text' : 'Binary')) throw new Error('negotiate: no WebSockets transport for the transfer format');
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}${hubPath}?id=${encodeURIComponent(body.connectionToken)}`, { perMessageDeflate: false });
    socket.on('error', () => {});
    await withTimeout(new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('close', () => reject(new Error('closed before open')));
    }), 5000, 'WebSocket open');
    const client = new StrictHubClient(socket, protocol);
    socket.send(JSON.stringify({ protocol, version: 1 }) + RS);
    await client.until(() => client.handshakeDone, 5000, 'handshake');
    return client;
  }

  /** Invokes `target` with an invocation id and waits for its completion. */
  async invoke(target: string, ...args: unknown[]): Promise<{ error?: string; result?: unknown }> {
    const id = String(++this.nextId);
    this.sendMessage(this.protocol === 'json'
      ? { type: 1, invocationId: id, target, arguments: args }
      : [1, {}, id, target, args, []]);
    await this.until(() => this.completions.has(id), 5000, `completion of ${target}`);
    return this.completions.get(id)!;
  }

  /** The arguments of every invocation of `target` so far. */
  of(target: string): unknown[][] {
    return this.invocations.filter((i) => i.target === target).map((i) => i.arguments);
  }

  /** Waits until `target` has been invoked `count` times. */
  async waitFor(target: string, count = 1, ms = 5000): Promise<unknown[][]> {
    await this.until(() => this.of(target).length >= count, ms, `${count} x ${target}`);
    return this.of(target);
  }

  close(): void {
    this.ws.close();
  }

  private sendMessage(message: unknown): void {
    if (this.protocol === 'json') {
      this.ws.send(JSON.stringify(message) + RS);
      return;
    }
    const body = encode(message);
    const prefix: number[] = [];
    let n = body.length;
    do {
      prefix.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
      n >>>= 7;
    } while (n > 0);
    this.ws.send(Buffer.concat([Buffer.from(prefix), body]), { binary: true });
  }

  private until(done: () => boolean, ms: number, what: string): Promise<void> {
    if (done()) return Promise.resolve();
    return withTimeout(new Promise<void>((resolve) => {
      const check = (): void => {
        if (done()) resolve();
        else this.waiters.push(check);
      };
      this.waiters.push(check);
    }), ms, what);
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (!this.handshakeDone) {
      // The handshake answer is JSON text ending in the record separator; ASP.NET Core writes `{}`.
      const text = data.toString('utf8');
      if (text !== '{}' + RS) this.violations.push(`handshake answer ${JSON.stringify(text)}`);
      this.handshakeDone = true;
    } else if (this.protocol === 'json') {
      if (isBinary) this.violations.push('a binary frame on a JSON connection');
      this.buffer = Buffer.concat([this.buffer, data]);
      let end: number;
      while ((end = this.buffer.indexOf(0x1e)) >= 0) {
        this.readJson(this.buffer.subarray(0, end).toString('utf8'));
        this.buffer = this.buffer.subarray(end + 1);
      }
    } else {
      if (!isBinary) this.violations.push('a text frame on a MessagePack connection');
      this.buffer = Buffer.concat([this.buffer, data]);
      this.readMessagePackFrames();
    }
    for (const w of this.waiters.splice(0)) w();
  }

  private readJson(text: string): void {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(text) as Record<string, unknown>;
    } catch {
      this.violations.push(`not JSON: ${text}`);
      return;
    }
    const bad = (why: string): void => void this.violations.push(`${why}: ${text}`);
    switch (m.type) {
      case 1:
        if (typeof m.target !== 'string' || !Array.isArray(m.arguments)) return bad('Invocation without target or arguments');
        if ('invocationId' in m) return bad('a server Invocation with an invocationId');
        this.invocations.push({ target: m.target, arguments: m.arguments });
        return;
      case 3:
        if (typeof m.invocationId !== 'string') return bad('Completion without invocationId');
        if ('error' in m && 'result' in m) return bad('Completion with both error and result');
        if ('error' in m && typeof m.error !== 'string') return bad('Completion error not a string');
        this.completions.set(m.invocationId, 'error' in m ? { error: m.error as string } : { result: m.result });
        return;
      case 6:
        if (Object.keys(m).length !== 1) return bad('Ping with more than its type');
        return;
      case 7:
        if ('error' in m && typeof m.error !== 'string') return bad('Close error not a string');
        return;
      default:
        return bad('a message type the server does not send');
    }
  }

  private readMessagePackFrames(): void {
    for (;;) {
      let length = 0;
      let shift = 0;
      let at = 0;
      for (;;) {
        if (at >= this.buffer.length || at > 4) return;
        const byte = this.buffer[at++]!;
        length |= (byte & 0x7f) << shift;
        shift += 7;
        if ((byte & 0x80) === 0) break;
      }
      if (this.buffer.length < at + length) return;
      const body = this.buffer.subarray(at, at + length);
      this.buffer = this.buffer.subarray(at + length);
      this.readMessagePack(body);
    }
  }

  private readMessagePack(body: Uint8Array): void {
    let items: unknown;
    try {
      items = decode(body);
    } catch {
      this.violations.push('not MessagePack');
      return;
    }
    const bad = (why: string): void => void this.violations.push(`${why}: ${JSON.stringify(items)}`);
    if (!Array.isArray(items) || typeof items[0] !== 'number') return bad('not an array starting with the type');
    const type = items[0];
    const lengths = MSGPACK_LENGTHS[type];
    if (!lengths) return bad('a message type the server does not send');
    if (!lengths.includes(items.length)) return bad(`type ${type} as ${items.length} items, not ${lengths.join(' or ')}`);
    switch (type) {
      case 1: {
        const [, headers, invocationId, target, args, streamIds] = items as [number, unknown, unknown, unknown, unknown, unknown];
        if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return bad('Invocation headers not a map');
        if (invocationId !== null) return bad('a server Invocation with an invocationId');
        if (typeof target !== 'string' || !Array.isArray(args) || !Array.isArray(streamIds)) return bad('Invocation target, arguments or stream ids mistyped');
        this.invocations.push({ target, arguments: args });
        return;
      }
      case 3: {
        const [, , invocationId, kind, value] = items as [number, unknown, unknown, unknown, unknown];
        if (typeof invocationId !== 'string') return bad('Completion without invocationId');
        if (kind === 1 && items.length === 5 && typeof value === 'string') this.completions.set(invocationId, { error: value });
        else if (kind === 2 && items.length === 4) this.completions.set(invocationId, {});
        else if (kind === 3 && items.length === 5) this.completions.set(invocationId, { result: value });
        else return bad('Completion result kind and length disagree');
        return;
      }
      case 7:
        if (items[1] !== null && typeof items[1] !== 'string') return bad('Close error neither nil nor a string');
        if (typeof items[2] !== 'boolean') return bad('Close allowReconnect not a boolean');
        return;
      default:
        return;
    }
  }
}
