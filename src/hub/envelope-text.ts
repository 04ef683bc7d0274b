// The text of a hub message's envelope (invocation and stream ids, the target, header names and values, a
// Close or Completion error) must be well-formed Unicode, in both protocols. Ids and the target come back
// in completions and error texts: a lone surrogate there was echoed, in MessagePack as bytes that are not
// UTF-8. ASP.NET's JSON reader cannot read such a string (GetString throws), so the message is a protocol
// error and the connection closes; arguments are judged apart, as a binding failure (dispatcher.ts).
import { isWellFormed } from '../well-formed.js';
import { InvalidDataError } from './errors.js';
import type { HubMessage } from './messages.js';

/** Throws InvalidDataError naming the first envelope field whose text is not well-formed. */
export function requireWellFormedEnvelope(message: HubMessage | null): void {
  if (message === null) return;
  const field = illFormedField(message);
  if (field !== undefined) throw new InvalidDataError(`Invalid text in '${field}': a lone UTF-16 surrogate.`);
}

function illFormedField(message: HubMessage): string | undefined {
  const m = message as { invocationId?: unknown; target?: unknown; error?: unknown; headers?: Record<string, string>; streamIds?: unknown[] };
  for (const name of ['invocationId', 'target', 'error'] as const) {
    const v = m[name];
    if (typeof v === 'string' && !isWellFormed(v)) return name;
  }
  if (m.headers) for (const key in m.headers) if (!isWellFormed(key) || !isWellFormed(m.headers[key]!)) return 'headers';
  if (m.streamIds?.some((id) => typeof id === 'string' && !isWellFormed(id))) return 'streamIds';
  return undefined;
}
