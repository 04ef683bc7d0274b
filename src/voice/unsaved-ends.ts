// Final records of ended sessions that the store could not write when they ended (data directory full or
// read-only). A session's end has happened whatever the disk says: its upstream link is closed and its
// members were told. The store reverts a change it cannot write, so without these the stored record would
// go on saying Active, and a second stop, the session's GET and `/api/voice/message` would all answer
// from it. Held here, they are what the service shows for those sessions, and they are written again
// every few seconds until the store takes them. Should the process die first, the next start records the
// session as ended by the restart, as any session a dead process left open.
import { errorText } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { SessionRecord } from '../store/types.js';

/** How often held records are tried again: a full disk is freed by a person, not in milliseconds. */
export const UNSAVED_END_RETRY_MS = 5000;

export class UnsavedEnds {
  private readonly records = new Map<string, SessionRecord>();
  private timer: NodeJS.Timeout | undefined;
  /** The current failure was logged: a disk that stays full is said once, not every few seconds. */
  private reported = false;

  constructor(
    private readonly save: (record: SessionRecord) => Promise<void>,
    private readonly logger: Logger,
    private readonly retryMs = UNSAVED_END_RETRY_MS,
  ) {}

  get(sessionId: string): SessionRecord | undefined {
    return this.records.get(sessionId);
  }

  /** Keeps `record` until a later write of it succeeds. */
  hold(record: SessionRecord): void {
    this.records.set(record.id, record);
    this.reported = false;
    this.timer ??= setInterval(() => void this.retry(), this.retryMs).unref();
  }

  /** Writes the held record of `sessionId` now, if there is one; throws the store's error when it cannot. */
  async write(sessionId: string): Promise<void> {
    const record = this.records.get(sessionId);
    if (!record) return;
    await this.save(record);
    this.written(record);
  }

  /** Tries every held record once; what still fails stays held. */
  async retry(): Promise<void> {
    const held = [...this.records.values()];
    const results = await Promise.allSettled(held.map((r) => this.save(r)));
    let failure: unknown;
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') this.written(held[i]!);
      else failure = result.reason;
    });
    const saved = held.length - this.records.size;
    if (saved > 0) {
      this.logger.info(`wrote ${saved} final session record(s) held since storage failed`);
      this.reported = false;
    }
    if (failure === undefined || this.reported) return;
    this.reported = true;
    this.logger.warn(`${this.records.size} final session record(s) still not written: ${errorText(failure)}`);
  }

  /** Drops the held records of a deleted device's sessions: its data went with it. */
  forgetDevice(deviceId: string): void {
    for (const record of [...this.records.values()]) if (record.deviceId === deviceId) this.written(record);
  }

  /** Stops retrying (at shutdown, after a last `retry`). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private written(record: SessionRecord): void {
    if (this.records.get(record.id) === record) this.records.delete(record.id);
    if (this.records.size === 0) this.close();
  }
}
