// The JSON hub protocol (SignalR's hub protocol, JSON encoding): one JSON object per record, text frames.
// Validation follows ASP.NET's JsonHubProtocol: missing or mistyped required properties are protocol
// errors, on every message type as ASP.NET reads them all in one pass; unknown message types are ignored.
import { Base64Text } from './base64-text.js';
import { InvalidDataError } from './errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth.js';
import { requireWellFormedEnvelope } from './envelope-text.js';
import { parseLeadingObject } from './json-leading-object.js';
import { isInt64Token, isIntegerToken, topLevelMembers } from './json-members.js';
import {
  MessageType,
  type HubMessage,
  type HubProtocol,
  type MessageHeaders,
} from './messages.js';
import { decodeUtf8, readRecord, writeRecord } from './text-format.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function requireString(obj: Json, name: string): string {
  const v = obj[name];
  if (v === undefined) throw new InvalidDataError(`Missing required property '${name}'.`);
  if (typeof v !== 'string') throw new InvalidDataError(`Expected '${name}' to be of type String.`);
  return v;
}

/**
 * A property that may be absent but, when present, must be a string. `null` is no string: ASP.NET Core
 * reads `invocationId` and `error` with its ReadAsString, which refuses every token but a String (null
 * included, where its ReadAsInt32 and ReadAsInt64 take null as absent), so the connection is closed.
 */
function optionalString(obj: Json, name: string): string | undefined {
  const v = obj[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new InvalidDataError(`Expected '${name}' to be of type String.`);
  return v;
}

function requireArray(obj: Json, name: string): unknown[] {
  const v = obj[name];
  if (v === undefined) throw new InvalidDataError(`Missing required property '${name}'.`);
  if (!Array.isArray(v)) throw new InvalidDataError(`Expected '${name}' to be of type Array.`);
  return v;
}

function requireNumber(obj: Json, name: string): number {
  const v = obj[name];
  if (v === undefined) throw new InvalidDataError(`Missing required property '${name}'.`);
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidDataError(`Expected '${name}' to be of type Number.`);
  return v;
}

/**
 * A sequence id is an Int64 in ASP.NET: a fraction cannot be one. Its range is judged on the text
 * (checkAsWritten): past 2^53 the number is the nearest double, which acknowledges, or is past, all
 * there is as the exact id would.
 */
function requireSequenceId(obj: Json): number {
  const v = requireNumber(obj, 'sequenceId');
  if (!Number.isInteger(v)) throw new InvalidDataError("Expected 'sequenceId' to be of type Int64.");
  return v;
}

/**
 * ASP.NET reads the type with GetInt32: a fraction or a number past Int32 is no message type, and the
 * connection is closed, where an unknown integer type is a message to ignore.
 */
function requireMessageType(obj: Json): number {
  const v = requireNumber(obj, 'type');
  if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) throw new InvalidDataError("Expected 'type' to be of type Int32.");
  return v;
}

// A null `headers` or `streamIds` is no object or array to ASP.NET's reader: refused, not taken as absent.
function checkHeaders(obj: Json): void {
  const v = obj.headers;
  if (v === undefined) return;
  if (!isObject(v)) throw new InvalidDataError("Expected 'headers' to be of type Object.");
  for (const value of Object.values(v)) {
    if (typeof value !== 'string') throw new InvalidDataError('Expected header values to be of type String.');
  }
}

function checkStreamIds(obj: Json): void {
  const v = obj.streamIds;
  if (v === undefined) return;
  if (!Array.isArray(v) || !v.every((id) => typeof id === 'string')) {
    throw new InvalidDataError("Expected 'streamIds' to be an Array of String.");
  }
}

/**
 * Each property ASP.NET's reader knows (but `type`, which requireMessageType reads), and how the reader
 * checks it as it meets it: a mistyped one closes the connection even on a Ping, or on a type it does
 * not know, where it has no use. An absent property passes every check.
 */
const PROPERTY_CHECKS: Readonly<Record<string, (obj: Json) => void>> = {
  invocationId: (obj) => optionalString(obj, 'invocationId'),
  error: (obj) => optionalString(obj, 'error'),
  target: (obj) => {
    if (obj.target !== undefined) requireString(obj, 'target');
  },
  arguments: (obj) => {
    if (obj.arguments !== undefined) requireArray(obj, 'arguments');
  },
  allowReconnect: (obj) => {
    if (obj.allowReconnect !== undefined && typeof obj.allowReconnect !== 'boolean') {
      throw new InvalidDataError("Expected 'allowReconnect' to be of type Boolean.");
    }
  },
  sequenceId: (obj) => {
    if (obj.sequenceId !== undefined && obj.sequenceId !== null) requireSequenceId(obj);
  },
  headers: checkHeaders,
  streamIds: checkStreamIds,
};
const PROPERTY_CHECK_LIST = Object.values(PROPERTY_CHECKS);

function checkKnownProperties(obj: Json): void {
  for (const check of PROPERTY_CHECK_LIST) check(obj);
}

/**
 * A property checkKnownProperties has type-checked: only whether it is there is left to check. The
 * branches read what it checked this way, so that no message pays twice for the same checks.
 */
function present<T>(obj: Json, name: string): T {
  const v = obj[name];
  if (v === undefined) throw new InvalidDataError(`Missing required property '${name}'.`);
  return v as T;
}

/** After checkKnownProperties: a string, or absent. */
const checkedString = (obj: Json, name: string): string | undefined => obj[name] as string | undefined;

/**
 * After checkKnownProperties: the id of a message that answers or refers to an invocation. ASP.NET
 * refuses an empty one as missing (string.IsNullOrEmpty), which closes the connection; only an
 * Invocation may go without.
 */
function presentInvocationId(obj: Json): string {
  const id = present<string>(obj, 'invocationId');
  if (id === '') throw new InvalidDataError("Missing required property 'invocationId'.");
  return id;
}

/** More top-level members than any hub message has (Invocation: type, invocationId, target, arguments, streamIds, headers). */
const FEW_MEMBERS = 8;

const INT32 = { type: 'Int32', fits: isIntegerToken } as const;
const INT64 = { type: 'Int64', fits: isInt64Token } as const;

/**
 * The integers ASP.NET reads with GetInt32 / GetInt64, which refuse a number written with a fraction or
 * an exponent, and how their text is judged: Int32's range is exact in the parsed number
 * (requireMessageType), Int64's is not. Names are compared, not looked up in an object: a name sliced
 * from the text is a fresh string, which a keyed lookup first searches V8's string table for, on every
 * member of every message.
 */
const integerProperty = (name: string): typeof INT32 | typeof INT64 | undefined =>
  name === 'type' ? INT32 : name === 'sequenceId' ? INT64 : undefined;

/**
 * What the parsed object no longer shows, checked in the text: an integer property written as `1.0`
 * or `1e0`, or past Int64 where a double cannot tell, and each occurrence of a property written twice
 * (ASP.NET checks every one it meets, where JSON.parse keeps the last). A message without either
 * costs one pass over its members' names.
 */
function checkAsWritten(text: string): void {
  const members = topLevelMembers(text);
  let repeated = false;
  // Names seen, once a message has more members than a hub message has (a comparison with each earlier
  // name costs nothing on those, and was quadratic on a 64 KiB object of 8,000 names: 370 ms a message).
  let seen: Set<string> | undefined;
  for (let i = 0; i < members.length; i++) {
    const { name, value } = members[i]!;
    const integer = integerProperty(name);
    if (integer !== undefined && value !== 'null' && isNumberToken(value) && !integer.fits(value)) {
      throw new InvalidDataError(`Expected '${name}' to be of type ${integer.type}.`);
    }
    if (repeated) continue;
    if (i < FEW_MEMBERS) {
      for (let j = 0; j < i && !repeated; j++) repeated = members[j]!.name === name;
    } else {
      seen ??= new Set(members.slice(0, i).map((m) => m.name));
      repeated = seen.has(name);
      seen.add(name);
    }
  }
  if (!repeated) return;
  // Only what the reader checks: a 64 KiB object of one unknown name repeated costs no parse per member.
  for (const { name, value } of members) {
    const check = name === 'type' ? checkTypeWritten : Object.hasOwn(PROPERTY_CHECKS, name) ? PROPERTY_CHECKS[name]! : undefined;
    check?.({ [name]: JSON.parse(value) as unknown });
  }
}

/**
 * A `type` written again is checked as the last one is: ASP.NET reads each with ReadAsInt32 and refuses a
 * null one ("Expected 'type' to be of type Number."), wherever it stands.
 */
const checkTypeWritten = (obj: Json): void => {
  requireMessageType(obj);
};

const isNumberToken = (value: string): boolean => {
  const c = value.charCodeAt(0);
  return c === 0x2d || (c >= 0x30 && c <= 0x39);
};

export function decodeJsonMessage(text: string): HubMessage | null {
  let obj: unknown;
  try {
    obj = parseLeadingObject(text);
  } catch (e) {
    throw new InvalidDataError(`Error reading JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isObject(obj)) throw new InvalidDataError('Unexpected JSON Token Type. Expected a JSON Object.');
  if (nestsDeeperThan(obj)) throw new InvalidDataError(`Error reading JSON: more than ${MAX_JSON_DEPTH} levels of nesting.`);
  checkAsWritten(text);
  const type = requireMessageType(obj);
  checkKnownProperties(obj);
  const headers = obj.headers as MessageHeaders | undefined;
  switch (type) {
    case MessageType.Invocation: {
      const invocationId = checkedString(obj, 'invocationId');
      return {
        type: MessageType.Invocation,
        headers,
        ...(invocationId !== undefined ? { invocationId } : {}),
        target: present<string>(obj, 'target'),
        arguments: present<unknown[]>(obj, 'arguments'),
        streamIds: obj.streamIds as string[] | undefined,
      };
    }
    case MessageType.StreamInvocation:
      return {
        type: MessageType.StreamInvocation,
        headers,
        invocationId: presentInvocationId(obj),
        target: present<string>(obj, 'target'),
        arguments: present<unknown[]>(obj, 'arguments'),
        streamIds: obj.streamIds as string[] | undefined,
      };
    case MessageType.StreamItem: {
      // The id first, so a message missing both is refused for its id, as ASP.NET Core refuses it.
      const invocationId = presentInvocationId(obj);
      if (!('item' in obj)) throw new InvalidDataError("Missing required property 'item'.");
      return { type: MessageType.StreamItem, headers, invocationId, item: obj.item };
    }
    case MessageType.Completion: {
      const invocationId = presentInvocationId(obj);
      const error = checkedString(obj, 'error');
      const hasResult = 'result' in obj;
      if (error !== undefined && hasResult) {
        throw new InvalidDataError("The 'error' and 'result' properties are mutually exclusive.");
      }
      return error !== undefined
        ? { type: MessageType.Completion, headers, invocationId, error, hasResult: false }
        : { type: MessageType.Completion, headers, invocationId, result: obj.result, hasResult };
    }
    case MessageType.CancelInvocation:
      return { type: MessageType.CancelInvocation, headers, invocationId: presentInvocationId(obj) };
    case MessageType.Ping:
      return { type: MessageType.Ping };
    case MessageType.Close: {
      const error = checkedString(obj, 'error');
      const allowReconnect = obj.allowReconnect as boolean | undefined;
      return { type: MessageType.Close, ...(error !== undefined ? { error } : {}), ...(allowReconnect ? { allowReconnect } : {}) };
    }
    case MessageType.Ack:
      return { type: MessageType.Ack, sequenceId: requireSequenceId(obj) };
    case MessageType.Sequence:
      return { type: MessageType.Sequence, sequenceId: requireSequenceId(obj) };
    default:
      // Future message types: ignored, as SignalR's hub protocol asks of old endpoints.
      return null;
  }
}

/**
 * byte[] travels as Base64 in JSON (SignalR's hub protocol type mappings). The replacer looks at the
 * holder's original value because Buffer's toJSON runs before a replacer sees the value.
 */
function replacer(this: unknown, key: string, value: unknown): unknown {
  const original = (this as Record<string, unknown>)[key];
  if (original instanceof Uint8Array) return Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64');
  return value;
}

/**
 * Writes the properties in the order ASP.NET Core's JsonHubProtocol writes them (type, headers,
 * invocationId, then the message's own), and leaves out what it leaves out (empty headers, an empty
 * invocation id, an empty error): the bytes do not depend on how the message object was built.
 */
export function encodeJsonMessage(message: HubMessage): string {
  if (message.type === MessageType.Invocation && message.streamIds === undefined && (message.headers === undefined || Object.keys(message.headers).length === 0) && !message.invocationId) {
    return plainInvocation(message.target, message.arguments);
  }
  const out: Json = { type: message.type };
  switch (message.type) {
    case MessageType.Invocation:
    case MessageType.StreamInvocation:
      putInvocationHead(out, message);
      out.target = message.target;
      out.arguments = message.arguments;
      if (message.streamIds !== undefined) out.streamIds = message.streamIds;
      break;
    case MessageType.StreamItem:
      putInvocationHead(out, message);
      out.item = message.item === undefined ? null : message.item;
      break;
    case MessageType.Completion:
      putInvocationHead(out, message);
      if (message.error) out.error = message.error;
      // JSON has no undefined: a result that is undefined is written as null, as for a .NET void result.
      else if (message.hasResult) out.result = message.result === undefined ? null : message.result;
      break;
    case MessageType.CancelInvocation:
      putInvocationHead(out, message);
      break;
    case MessageType.Ping:
      break;
    case MessageType.Close:
      // An empty error is still an error, as ASP.NET Core keeps it.
      if (message.error !== undefined) out.error = message.error;
      if (message.allowReconnect) out.allowReconnect = true;
      break;
    case MessageType.Ack:
    case MessageType.Sequence:
      out.sequenceId = message.sequenceId;
      break;
  }
  return writeRecord(stringify(out));
}

/** JSON text of a value; bytes as Base64. */
function stringify(value: unknown): string {
  // A replacer switches off JSON.stringify's fast path; only values that carry bytes need it.
  return carriesBytes(value, 0) ? JSON.stringify(value, replacer) : JSON.stringify(value);
}

/** `{"type":1,"target":...,"arguments":[` by target: the hub sends a few targets many times. */
const invocationHeads = new Map<string, string>();
const MAX_CACHED_HEADS = 64;

/**
 * An invocation without headers or id, what the hub sends to clients: its head written once per target,
 * then the arguments, each Base64Text between quotes as it is (Base64 needs no escaping) and the others
 * as JSON writes them. The same text as the general path, with less of it scanned per message.
 */
function plainInvocation(target: string, args: readonly unknown[]): string {
  let head = invocationHeads.get(target);
  if (head === undefined) {
    head = `{"type":${MessageType.Invocation},"target":${JSON.stringify(target)},"arguments":[`;
    if (invocationHeads.size < MAX_CACHED_HEADS) invocationHeads.set(target, head);
  }
  let text = head;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    // What JSON writes for an array item it cannot represent (undefined, a function) is null.
    const each = arg instanceof Base64Text ? `"${arg.text}"` : (stringify(arg) as string | undefined) ?? 'null';
    text += i === 0 ? each : `,${each}`;
  }
  return writeRecord(`${text}]}`);
}

function putInvocationHead(out: Json, message: { readonly headers?: MessageHeaders; readonly invocationId?: string }): void {
  if (message.headers !== undefined && Object.keys(message.headers).length > 0) out.headers = message.headers;
  if (message.invocationId) out.invocationId = message.invocationId;
}

/** True when a Uint8Array (Buffer included) is anywhere in `value`; deep structures count as carrying bytes. */
function carriesBytes(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (value instanceof Uint8Array) return true;
  if (depth > 32) return true; // let the replacer path deal with it
  if (Array.isArray(value)) {
    for (const item of value) if (carriesBytes(item, depth + 1)) return true;
    return false;
  }
  for (const key in value) if (carriesBytes((value as Record<string, unknown>)[key], depth + 1)) return true;
  return false;
}

export const jsonProtocol: HubProtocol = {
  name: 'json',
  binary: false,
  read: readRecord,
  decode: (body) => {
    let text: string;
    try {
      text = decodeUtf8(body);
    } catch {
      throw new InvalidDataError('Invalid UTF-8 in a JSON message.');
    }
    const message = decodeJsonMessage(text);
    requireWellFormedEnvelope(message);
    return message;
  },
  // Text is decoded into strings: nothing of the body is kept.
  decodesViews: false,
  encode: encodeJsonMessage,
};
