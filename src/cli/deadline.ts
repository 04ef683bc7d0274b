// A signal that aborts after `ms` or when any of `others` does. Node 20's AbortSignal.any() holds its
// sources weakly, and an AbortSignal.timeout() that nothing else references is collected by the next
// garbage collection and never fires: `voice-hub health` against a service that accepted and never
// answered waited for undici's own 300 s instead of its 15. A timer of our own keeps the controller.

export interface Deadline {
  readonly signal: AbortSignal;
  /** Stops the timer once the work is done, so a finished command does not wait for it. */
  clear(): void;
}

export function deadline(ms: number, ...others: (AbortSignal | undefined)[]): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms);
  const detach: (() => void)[] = [];
  for (const other of others) {
    if (other === undefined) continue;
    if (other.aborted) {
      controller.abort(other.reason);
      break;
    }
    const onAbort = (): void => controller.abort(other.reason);
    other.addEventListener('abort', onAbort, { once: true });
    detach.push(() => other.removeEventListener('abort', onAbort));
  }
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      for (const d of detach) d();
    },
  };
}
