// Retained discovery configs of this hub's Home Assistant node that nothing it knows accounts for are
// cleared (stale-discovery.ts, clearIfStale), but only once the connection they came on has lasted a while.
// Two hubs with one instance id (a cloned SD card, a backup restored on a second Pi) take the broker
// connection from each other, and each saw the other's devices as configs left by an earlier run of
// its own: they deleted each other's Home Assistant devices on every takeover. A twin reconnects within
// its longest reconnect delay and takes the connection back, so a connection that outlasts twice that
// has none, and what it found is cleared then; one taken over before that clears nothing.

/** Configs found before the connection settled: more wait for the next connection, which finds them again (they are retained). */
const MAX_WAITING = 4096;

/** The state topics a config's `state_topic` may name to be cleared with it: `<prefix>/devices/<one level>/state`. */
const STATE_LEVEL = /^[^/+#]+$/;

/**
 * The device state topic a stale config of the hub's node names, if it is one of the hub's own
 * (`<prefix>/devices/<id>/state`). A device deleted while the broker was away, or by a service killed
 * before the clearing went out, left that retained state too; the topic carries no instance id (hubs
 * sharing the prefix share it), but a config under this hub's node says whose device it was.
 */
export function deviceStateTopicOf(payload: Buffer, topicPrefix: string): string | undefined {
  let config: unknown;
  try {
    config = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  const topic = (config as { state_topic?: unknown } | null)?.state_topic;
  const head = `${topicPrefix}/devices/`;
  if (typeof topic !== 'string' || !topic.startsWith(head) || !topic.endsWith('/state')) return undefined;
  return STATE_LEVEL.test(topic.slice(head.length, -'/state'.length)) ? topic : undefined;
}

export class StaleConfigSweep {
  /** Topic -> its object id and the device state topic it names (deviceStateTopicOf). */
  private readonly waiting = new Map<string, { object: string; stateTopic: string | undefined }>();
  private timer: NodeJS.Timeout | undefined;
  private settled = false;

  constructor(
    /** How long a connection must last before anything is cleared. */
    private readonly settleMs: number,
    /** Judges one config (topic, object id, the state topic it names) and clears it if it is stale. */
    private readonly judge: (topic: string, object: string, stateTopic: string | undefined) => void,
  ) {}

  connected(): void {
    this.reset();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.settled = true;
      const found = [...this.waiting];
      this.waiting.clear();
      for (const [topic, { object, stateTopic }] of found) this.judge(topic, object, stateTopic);
    }, this.settleMs);
    // Not a reason to keep a process alive.
    this.timer.unref();
  }

  /** A retained config of the hub's node came in on the current connection. */
  found(topic: string, object: string, stateTopic: string | undefined): void {
    if (this.settled) this.judge(topic, object, stateTopic);
    else if (this.waiting.size < MAX_WAITING || this.waiting.has(topic)) this.waiting.set(topic, { object, stateTopic });
  }

  /** The connection ended (or the publisher closed): what it found is forgotten. */
  disconnected(): void {
    this.reset();
  }

  private reset(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.settled = false;
    this.waiting.clear();
  }
}
