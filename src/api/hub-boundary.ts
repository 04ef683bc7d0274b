// The one place where a voice hub method's failure becomes what the device is told. The methods answer
// with `Error` events rather than completion errors (devices listen for `Error`), so the dispatcher's
// completion handling never sees their failures: a coded domain error is the device's own mistake or
// the session's state and its text is sent as it is; anything else is a bug, logged with its stack
// under a trace id, and the device gets only that id.
import { errorText, isDomainError, newTraceId } from '../errors.js';
import type { HubCallContext, HubMethod } from '../hub/index.js';
import type { Logger } from '../log/logger.js';
import { toCaller } from './hub-events.js';

export const unexpectedErrorText = (traceId: string): string =>
  `An unexpected error occurred on the server (trace id ${traceId}).`;

/** Wraps a hub method that reports through `Error` events; the wrapped method never throws. */
export function reportingErrors(name: string, method: HubMethod, logger: Logger): HubMethod {
  const report = (ctx: HubCallContext, e: unknown): void => {
    if (isDomainError(e)) {
      logger.debug(`'${name}' from ${ctx.connectionId}: ${e.message}`);
      toCaller(ctx, 'Error', e.message);
      return;
    }
    const traceId = newTraceId();
    logger.error(`'${name}' from ${ctx.connectionId} failed (trace id ${traceId}): ${e instanceof Error ? (e.stack ?? e.message) : errorText(e)}`);
    toCaller(ctx, 'Error', unexpectedErrorText(traceId));
  };
  // A method that returns at once (SendAudioData, per packet) stays synchronous: no promise per call.
  return (ctx, args) => {
    try {
      const result = method(ctx, args);
      if (result instanceof Promise) return result.then(() => undefined, (e: unknown) => report(ctx, e));
    } catch (e) {
      report(ctx, e);
    }
    return undefined;
  };
}
