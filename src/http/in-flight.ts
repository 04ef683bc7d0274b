// The HTTP requests that have started and are not answered yet. A shutdown waits for them after it stops
// taking connections: a registration whose record is on disk must also get its answer (with the device
// token in it), or the client retries into a 409 and the device can only be recovered by an admin.
// A counter, no object per request: every request passes here.

export class InFlightRequests {
  private count = 0;
  private waiters: (() => void)[] = [];

  begin(): void {
    this.count++;
  }

  /** Once per `begin`: the request was answered or aborted. */
  end(): void {
    this.count--;
    if (this.count === 0) for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Resolves when no request is in flight, or after `maxMs`; with how many were still in flight then. */
  async drained(maxMs: number): Promise<number> {
    if (this.count === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      timer = setTimeout(resolve, maxMs);
    });
    clearTimeout(timer);
    return this.count;
  }
}
