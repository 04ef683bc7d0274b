// Binds an invocation's arguments to what the hub method declares, the same way for both protocols
// (ASP.NET binds to the method's parameter types and answers a failure with a completion error, in
// JSON and MessagePack alike). In SignalR's hub protocol, bytes travel as Base64 text in JSON
// and as `bin` in MessagePack; both bind to a Uint8Array here.
import { decodeBase64 } from '../base64.js';
import type { BindingFailure } from './messages.js';

/** A parameter type: `string` takes null too, as a .NET string parameter does; `any` takes anything. */
export type HubParameter = 'string' | 'number' | 'boolean' | 'bytes' | 'any';

export const HUB_PARAMETERS: readonly HubParameter[] = ['string', 'number', 'boolean', 'bytes', 'any'];

type Bound = { readonly ok: true; readonly value: unknown } | { readonly ok: false };
const bound = (value: unknown): Bound => ({ ok: true, value });
const FAILED: Bound = { ok: false };

function bindOne(type: HubParameter, value: unknown): Bound {
  switch (type) {
    case 'any':
      return bound(value);
    case 'string':
      return typeof value === 'string' || value === null ? bound(value) : FAILED;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? bound(value) : FAILED;
    case 'boolean':
      return typeof value === 'boolean' ? bound(value) : FAILED;
    case 'bytes': {
      if (value instanceof Uint8Array || value === null) return bound(value);
      const bytes = typeof value === 'string' ? decodeBase64(value) : undefined;
      return bytes ? bound(bytes) : FAILED;
    }
  }
}

/**
 * `parameters`: how many arguments of any type, or the type of each. Returns the arguments to call
 * the method with, or why they do not bind (for the log; the client gets ASP.NET's generic text).
 */
export function bindArguments(parameters: number | readonly HubParameter[], args: readonly unknown[]): { args: unknown[] } | { failure: BindingFailure } {
  const expected = typeof parameters === 'number' ? parameters : parameters.length;
  if (args.length !== expected) return { failure: `Invocation provides ${args.length} argument(s) but target expects ${expected}.` };
  if (typeof parameters === 'number') return { args: [...args] };
  const out: unknown[] = [];
  for (let i = 0; i < parameters.length; i++) {
    const result = bindOne(parameters[i]!, args[i]);
    if (!result.ok) return { failure: `Argument ${i + 1} cannot be bound as ${parameters[i]}.` };
    out.push(result.value);
  }
  return { args: out };
}
