// Incoming MQTT packets over a size limit are skipped as their bytes arrive, never held. mqtt.js' parser
// gathers a whole packet in memory before it parses it, and MQTT lets a PUBLISH be 256 MiB: any client
// of the broker could publish one, retained, to a topic the hub subscribes to (Home Assistant's status
// topic), and every hub on that broker would hold it, again after each reconnect. The hub subscribes
// only to Home Assistant's status ("online", "offline") and its own discovery configs (a few KiB), so
// anything near the limit is not for it.
//
// The scanner reads each packet's fixed header (type, flags, remaining length) and passes packets within
// the limit on untouched. Of a PUBLISH over it, it keeps only the topic and packet id (its first bytes),
// counts the rest away, and reports it, with the acknowledgement the broker waits for at QoS 1 (PUBACK),
// so the broker's in-flight window is not left short. Any other packet type over the
// limit only comes from a broken broker, and so does a remaining length longer than four bytes: both
// end the connection with an error, and mqtt.js reconnects.

/** Packets (fixed header included) above this are skipped: 256 KiB, a hundred times our largest config. */
export const MAX_INCOMING_PACKET_BYTES = 256 * 1024;

/**
 * The QoS the hub subscribes at, and so the highest a broker may deliver to it (MQTT 3.1.1 section
 * 3.8.4: the minimum of the publisher's and the granted QoS). A QoS 2 message is held by mqtt.js from its
 * PUBLISH to the broker's PUBREL: a broker that sent them under every packet id and never released one
 * made the hub hold 65,535 messages of up to the size limit (16 GiB). Such a PUBLISH ends the connection.
 */
export const SUBSCRIPTION_QOS = 1;

const PUBLISH = 3;
const PUBACK = 4;
/** A PUBLISH skipped for its size. */
export interface SkippedMessage {
  /** The topic as far as the packet holds it (at most 65,535 bytes, MQTT's limit). */
  topic: string;
  /** The whole packet's size in bytes, as its header announced it. */
  bytes: number;
  qos: number;
  /** Sent from the broker's store of retained messages: one the hub may have to clear (a stale discovery config). */
  retained: boolean;
}

/** Reading states: a fixed header; a packet passed on; the start of a skipped PUBLISH kept; the rest skipped. */
const enum State { Header, Pass, Keep, Skip }

export class IncomingPacketLimit {
  private state = State.Header;
  /** Fixed header bytes read so far (type and flags, then up to 4 length bytes). */
  private readonly header = Buffer.alloc(5);
  private headerLength = 0;
  /** Bytes of the current packet's body still to pass, keep or skip. */
  private left = 0;
  /** The kept start of a skipped PUBLISH: topic length, topic, packet id. */
  private kept: Buffer = Buffer.alloc(0);
  private keptLength = 0;
  private skipped: SkippedMessage | undefined;

  constructor(
    private readonly limit: number,
    /** Told of each skipped PUBLISH; `ack` is the acknowledgement to write to the broker, if any. */
    private readonly onSkipped: (message: SkippedMessage, ack: Buffer | undefined) => void,
  ) {}

  /**
   * The bytes of `chunk` that belong to packets within the limit, in order (views into `chunk` where a
   * run lies in it whole). Throws for a packet no broker may send; the connection is then unusable.
   */
  filter(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    /** Start of the run of passed bytes in this chunk, or -1. */
    let run = this.state === State.Pass ? 0 : -1;
    /** Where the packet whose header is being read started in this chunk (-1: in an earlier chunk). */
    let packetStart = -1;
    let i = 0;
    while (i < chunk.length) {
      switch (this.state) {
        case State.Header: {
          if (this.headerLength === 0) packetStart = i;
          const byte = chunk[i++]!;
          this.header[this.headerLength++] = byte;
          if (this.headerLength === 1 || (byte & 0x80) !== 0) {
            if (this.headerLength === 5) throw new Error('the MQTT broker sent a packet length longer than 4 bytes');
            break;
          }
          const type = this.header[0]! >> 4;
          const qos = (this.header[0]! >> 1) & 3;
          if (type === PUBLISH && qos > SUBSCRIPTION_QOS) {
            throw new Error(qos === 3 ? 'the MQTT broker sent a PUBLISH with QoS 3' : `the MQTT broker sent a PUBLISH with QoS ${qos}, above the QoS ${SUBSCRIPTION_QOS} the hub subscribed at`);
          }
          const remaining = this.remainingLength();
          const total = this.headerLength + remaining;
          if (total <= this.limit) {
            if (packetStart >= 0) {
              if (run < 0) run = packetStart;
            } else {
              out.push(Buffer.from(this.header.subarray(0, this.headerLength)));
              run = i;
            }
            this.headerLength = 0;
            this.left = remaining;
            this.state = remaining > 0 ? State.Pass : State.Header;
            break;
          }
          if (type !== PUBLISH) throw new Error(`the MQTT broker sent a packet of type ${type} and ${total} bytes`);
          if (run >= 0 && packetStart > run) out.push(chunk.subarray(run, packetStart));
          run = -1;
          this.skipped = { topic: '', bytes: total, qos, retained: (this.header[0]! & 1) === 1 };
          this.headerLength = 0;
          this.left = remaining;
          this.kept = Buffer.alloc(Math.min(remaining, 2));
          this.keptLength = 0;
          this.state = State.Keep;
          break;
        }
        case State.Pass:
        case State.Skip: {
          // The same count either way: passed bytes are inside the chunk's run, skipped ones outside it.
          const n = Math.min(this.left, chunk.length - i);
          i += n;
          this.left -= n;
          if (this.left === 0) this.state = State.Header;
          break;
        }
        case State.Keep: {
          const n = Math.min(this.kept.length - this.keptLength, chunk.length - i);
          chunk.copy(this.kept, this.keptLength, i, i + n);
          this.keptLength += n;
          this.left -= n;
          i += n;
          if (this.keptLength === this.kept.length) this.kept = this.keepMore();
          break;
        }
      }
    }
    if (run >= 0) {
      // A header still being read is held back until its packet is known to pass.
      const end = this.state === State.Header && this.headerLength > 0 && packetStart >= 0 ? packetStart : chunk.length;
      if (end > run) out.push(chunk.subarray(run, end));
    }
    return out;
  }

  private remainingLength(): number {
    let value = 0;
    for (let k = this.headerLength - 1; k >= 1; k--) value = value * 128 + (this.header[k]! & 0x7f);
    return value;
  }

  /**
   * The kept bytes are complete as far as they go: after the topic length, keep the topic and the
   * packet id; once those are in (or the packet ends first), report the message and skip the rest.
   */
  private keepMore(): Buffer {
    const kept = this.kept;
    const qos = this.skipped!.qos;
    if (kept.length === 2 && this.left > 0) {
      const wanted = Math.min(kept.readUInt16BE(0) + (qos > 0 ? 2 : 0), this.left);
      if (wanted > 0) {
        const more = Buffer.alloc(2 + wanted);
        kept.copy(more, 0);
        this.keptLength = 2;
        return more;
      }
    }
    this.report(kept);
    this.state = this.left > 0 ? State.Skip : State.Header;
    return Buffer.alloc(0);
  }

  private report(kept: Buffer): void {
    const skipped = this.skipped!;
    this.skipped = undefined;
    // A packet too short for its own topic length is reported as far as it goes (no id, no ack).
    const idAt = kept.length >= 2 ? 2 + kept.readUInt16BE(0) : Infinity;
    skipped.topic = kept.toString('utf8', 2, Math.min(idAt, kept.length));
    let ack: Buffer | undefined;
    if (skipped.qos > 0 && kept.length >= idAt + 2) {
      ack = Buffer.from([PUBACK << 4, 2, kept[idAt]!, kept[idAt + 1]!]);
    }
    this.onSkipped(skipped, ack);
  }
}
