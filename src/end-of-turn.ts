// Work gathered during one event-loop turn and done once at its end (setImmediate): the hub's socket
// batches, the upstream links' frames and the decoder threads' jobs all flush this way, so the frames
// of one turn leave together and a thread is woken once per turn, not once per packet.
//
// A turn is not always short. With hundreds of devices talking, a turn that runs long finds every
// device's next packet waiting, so the next turn is as long: 300 devices here settled into turns of up
// to 500 events and 25 ms, and what waited for a turn's end waited that long at each hop of a round
// trip. So the upstream writes and the decoder jobs are held at most MAX_HOLD_MS: the first add() after
// that lets all of them go, and the turn's end what came since. Within a short turn, or a burst's first
// millisecond, they still leave together. The hub's socket batches alone keep the whole turn
// (`wholeTurn`): a client with many calls in flight gets many frames a turn, and sending them in pieces
// cost 12 % of the round trips per CPU-second at 16 in flight, where holding the writes and the jobs
// cost nothing measurable. At 300 devices, three runs alternating with the code before it: the answers'
// p99 63-74 ms against 82-108 ms (single runs of one build vary more than that with the machine's other
// load; bench/RESULTS.md gives both).
import { monotonicMs } from './monotonic-clock.js';

/** How long upstream writes and decoder jobs may wait for their turn's end. */
export const MAX_HOLD_MS = 1;

/** The EndOfTurns held at most MAX_HOLD_MS that have work waiting, in the order each got its first item. */
const held = new Set<EndOfTurn<unknown>>();
/** Those that wait for the turn's end however long it is. */
const wholeTurn = new Set<EndOfTurn<unknown>>();
/** monotonicMs() when the oldest item in `held` came; only read while `held` is not empty. */
let heldSince = 0;
let scheduled = false;
/** Set while releaseHeld() runs: work a flush adds goes out in the same pass. */
let releasing = false;
/** Where the hold's milliseconds come from; tests swap it so that a loaded machine cannot decide them. */
let clock: () => number = () => monotonicMs();

/** Replaces the clock the hold is measured on (tests only); returns a function that puts it back. */
export function useClock(next: () => number): () => void {
  const previous = clock;
  clock = next;
  return () => {
    clock = previous;
  };
}

function releaseHeld(): void {
  releasing = true;
  try {
    // An EndOfTurn that gets work again while this runs is visited again.
    for (const each of held) each.flush();
  } finally {
    releasing = false;
  }
}

function atTurnEnd(): void {
  scheduled = false;
  releaseHeld();
  for (const each of wholeTurn) each.flush();
}

/** A set of items that `finish` is called on, each once, at the end of the turn they were added in. */
export class EndOfTurn<T> {
  private readonly pending = new Set<T>();
  /** `held` or `wholeTurn`: where this one is listed while it has work waiting. */
  private readonly waitsIn: Set<EndOfTurn<unknown>>;

  constructor(private readonly finish: (item: T) => void, options: { wholeTurn?: boolean } = {}) {
    this.waitsIn = options.wholeTurn ? wholeTurn : held;
  }

  /** Adds `item` for this turn's end; false when it is already waiting (nothing changes). */
  add(item: T): boolean {
    const now = clock();
    if (held.size > 0 && now - heldSince >= MAX_HOLD_MS && !releasing) releaseHeld();
    if (this.pending.has(item)) return false;
    if (this.pending.size === 0) {
      if (this.waitsIn === held && held.size === 0) heldSince = now;
      this.waitsIn.add(this as EndOfTurn<unknown>);
    }
    this.pending.add(item);
    if (!scheduled) {
      scheduled = true;
      setImmediate(atTurnEnd);
    }
    return true;
  }

  /** `item` was finished early or let go: the turn's end skips it. */
  delete(item: T): void {
    this.pending.delete(item);
    if (this.pending.size === 0) this.waitsIn.delete(this as EndOfTurn<unknown>);
  }

  /** Finishes everything waiting now. */
  flush(): void {
    // Items finished here may delete themselves, and new ones may come: Set iteration allows both.
    for (const item of this.pending) {
      this.pending.delete(item);
      this.finish(item);
    }
    this.waitsIn.delete(this as EndOfTurn<unknown>);
  }
}
