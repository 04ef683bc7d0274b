// The broker connection mqtt.js reads and writes: a TCP socket whose incoming bytes pass through
// IncomingPacketLimit (packet-limit.ts) before mqtt.js' parser sees them. Writes, the end, errors and
// the close go straight through, so mqtt.js sees the socket's own errors (their codes make the log's
// reasons) and reconnects on its close as before.
import { Duplex } from 'node:stream';
import net from 'node:net';
import { errorText } from '../errors.js';
import { IncomingPacketLimit, type SkippedMessage } from './packet-limit.js';

export class LimitedConnection extends Duplex {
  private readonly tcp: net.Socket;
  private readonly limit: IncomingPacketLimit;

  constructor(host: string, port: number, maxPacketBytes: number, onSkipped: (message: SkippedMessage) => void) {
    // No half-open state: when the broker ends its side, mqtt.js sees the end and the close together.
    super({ allowHalfOpen: false });
    this.limit = new IncomingPacketLimit(maxPacketBytes, (message, ack) => {
      // Through this stream's own queue, behind every part of mqtt.js' packets already written to it
      // (a packet is several writes; some may still wait for the socket to drain).
      if (ack && !this.writableEnded) this.write(ack);
      onSkipped(message);
    });
    this.tcp = net.createConnection({ host, port });
    this.tcp.on('data', (chunk: Buffer) => this.received(chunk));
    this.tcp.on('end', () => this.push(null));
    this.tcp.on('error', (e) => this.destroy(e));
    this.tcp.on('close', () => this.destroy());
  }

  private received(chunk: Buffer): void {
    let pieces: Buffer[];
    try {
      pieces = this.limit.filter(chunk);
    } catch (e) {
      // With a code, as the socket's own errors have: mqtt.js passes only those on, so the log says why.
      this.destroy(Object.assign(new Error(`MQTT protocol error: ${errorText(e)}`), { code: 'EPROTO' }));
      return;
    }
    let more = true;
    for (const piece of pieces) more = this.push(piece);
    if (!more) this.tcp.pause();
  }

  override _read(): void {
    this.tcp.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this._writev([{ chunk }], done);
  }

  /**
   * What mqtt.js wrote while corked (the parts of one packet) in one socket write, as when it wrote to the
   * socket itself: part by part, Nagle's algorithm held each part after the first until the broker's
   * delayed ACK (up to 40 ms a packet on Linux).
   */
  override _writev(chunks: Array<{ chunk: Buffer }>, done: (error?: Error | null) => void): void {
    this.tcp.cork();
    let more = true;
    for (const { chunk } of chunks) more = this.tcp.write(chunk);
    this.tcp.uncork();
    if (more) done();
    else this.tcp.once('drain', () => done());
  }

  override _final(done: (error?: Error | null) => void): void {
    this.tcp.end(() => done());
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.tcp.destroy();
    done(error);
  }
}
