// What one simulated device counts: every packet it was due to send, and what came back for it. Pure
// bookkeeping (no client, no clock of its own), so it is table-tested. SIMULATE_COUNTERS defines each
// counter; it is also the end of `voice-hub simulate --help`.
//
// One connection is ordered end to end, so a connection's AudioProcessed/Error events answer its sends
// first in, first out; when the connection is lost, its sends still waiting can get no answer any more.

export const SIMULATE_COUNTERS = `Counters (per run, summed over the devices):
packets (device -> service), identified by AudioProcessed.sequence:
  expected    one packet due per 20 ms of streaming, sent or not;
  arrived     its AudioProcessed came (a distinct sequence number);
  lost        expected - arrived - refused by an Error: held back while the device was not in its
              session, cut off in flight, or processed while the device was away so it never heard;
  duplicated  an AudioProcessed for a sequence already seen, or for no packet sent on that connection;
  late        its AudioProcessed came more than --late-after ms after the device sent it.
responses (service -> device): the echo upstream answers each packet the service forwarded, in order,
with the same Opus bytes (AudioData; AudioResponse is its PCM). An answer is matched to the earliest
packet sent after the last answered one that has its bytes (the 50 simulated packets repeat):
  expected    packets the service forwarded (its audioPacketsSent when the session is stopped);
  arrived     answers matched to a packet;
  lost        expected - arrived;
  duplicated  answers matching no packet sent after the last answered one, or repeating the bytes of
              one of the last 25 answered while skipping 25 or more unanswered packets;
  late        matched more than --late-after ms after its packet was sent.`;

export interface PacketCounts {
  due: number;
  heldBack: number;
  processed: number;
  refused: number;
  lost: number;
  duplicated: number;
  late: number;
}

export interface ResponseCounts {
  expected: number;
  received: number;
  answered: number;
  lost: number;
  duplicated: number;
  late: number;
}

export interface TallySummary {
  packets: PacketCounts;
  responses: ResponseCounts;
  /** Send -> its matched response, ms. */
  latenciesMs: number[];
}

interface Sent {
  readonly content: number;
  readonly at: number;
  refused: boolean;
}

export class SimTally {
  private readonly sent: Sent[] = [];
  /** Positions in `sent` waiting for their AudioProcessed or Error on the current connection. */
  private awaiting: number[] = [];
  private readonly sequences = new Set<number>();
  /** The first position a response may match. */
  private answerFrom = 0;
  /** Recently answered positions, newest last (at most half a period). */
  private readonly recent: number[] = [];
  private heldBackCount = 0;
  private processedCount = 0;
  private refusedCount = 0;
  private duplicatedPackets = 0;
  private latePackets = 0;
  private received = 0;
  private answeredCount = 0;
  private lateResponses = 0;
  readonly latenciesMs: number[] = [];

  /** @param period how many distinct packets the device cycles through (their bytes identify them modulo it). */
  constructor(private readonly lateMs: number, private readonly period: number) {}

  /** A packet was due while the device could not send it. */
  heldBack(): void {
    this.heldBackCount++;
  }

  /** The device handed packet `content` (its index in the cycle) to its client at `at` ms. */
  send(content: number, at: number): void {
    this.awaiting.push(this.sent.length);
    this.sent.push({ content, at, refused: false });
  }

  processed(sequence: number, at: number): void {
    if (this.sequences.has(sequence)) {
      this.duplicatedPackets++;
      return;
    }
    this.sequences.add(sequence);
    const position = this.awaiting.shift();
    if (position === undefined) {
      this.duplicatedPackets++; // the service processed more than this connection sent
      return;
    }
    this.processedCount++;
    if (at - this.sent[position]!.at > this.lateMs) this.latePackets++;
  }

  /** An Error event answered the oldest waiting send. */
  refused(): void {
    const position = this.awaiting.shift();
    if (position === undefined) return;
    this.refusedCount++;
    this.sent[position]!.refused = true;
  }

  /** The connection is gone: sends still waiting get no AudioProcessed or Error on the next one. */
  connectionLost(): void {
    this.awaiting = [];
  }

  /** A response carrying the bytes of packet `content` came at `at` ms. */
  response(content: number, at: number): void {
    this.received++;
    const half = Math.floor(this.period / 2);
    let match = -1;
    for (let i = this.answerFrom; i < this.sent.length && i < this.answerFrom + this.period * 4; i++) {
      const s = this.sent[i]!;
      if (!s.refused && s.content === content) {
        match = i;
        break;
      }
    }
    const repeatsRecent = this.recent.some((p) => this.sent[p]!.content === content);
    if (match < 0 || (match - this.answerFrom >= half && repeatsRecent)) return; // duplicated
    this.answeredCount++;
    this.answerFrom = match + 1;
    this.recent.push(match);
    if (this.recent.length > half) this.recent.shift();
    const latency = at - this.sent[match]!.at;
    this.latenciesMs.push(latency);
    if (latency > this.lateMs) this.lateResponses++;
  }

  /** Nothing sent on this connection waits for an answer, and every processed packet was answered. */
  get settled(): boolean {
    return this.awaiting.length === 0 && this.answeredCount >= this.processedCount;
  }

  /** @param serverPackets the service's own count of packets it forwarded, when known. */
  summary(serverPackets: number | undefined): TallySummary {
    const due = this.sent.length + this.heldBackCount;
    const expected = serverPackets ?? this.processedCount;
    return {
      packets: {
        due,
        heldBack: this.heldBackCount,
        processed: this.processedCount,
        refused: this.refusedCount,
        lost: due - this.processedCount - this.refusedCount,
        duplicated: this.duplicatedPackets,
        late: this.latePackets,
      },
      responses: {
        expected,
        received: this.received,
        answered: this.answeredCount,
        lost: Math.max(0, expected - this.answeredCount),
        duplicated: this.received - this.answeredCount,
        late: this.lateResponses,
      },
      latenciesMs: this.latenciesMs,
    };
  }
}
