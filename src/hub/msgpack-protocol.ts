// The MessagePack hub protocol (SignalR's hub protocol, MessagePack encoding): each message is a
// MessagePack array whose first item is the message type, framed by a VarInt length prefix, in
// binary frames. `bin` values (audio) decode to Uint8Array.
import { Decoder } from '@msgpack/msgpack';
import { readBinaryMessage, writeBinaryMessage } from './binary-format.js';
import { Base64Text, hasBase64Text } from './base64-text.js';
import { InvalidDataError } from './errors.js';
import { MAX_MESSAGEPACK_DEPTH } from '../json-depth.js';
import { requireWellFormedEnvelope } from './envelope-text.js';
import { hubMessagePackEncoder } from './msgpack-encoder.js';
import { writeMessagePackFrame } from './msgpack-writer.js';
import { MessageType, type BindingFailure, type HubMessage, type HubProtocol, type MessageHeaders } from './messages.js';
import { arrayHeader, isInt64Item, MalformedMessagePackError, isIntegerItem, mapKeysAreStrings, nestsDeeperAt, skipValue, strsAreUtf8 } from './msgpack-walk.js';

/** Completion result kinds. */
export const ResultKind = { Error: 1, Void: 2, NonVoid: 3 } as const;

const encoder = hubMessagePackEncoder();

/** Decodes one MessagePack value (a message, or one of its items); throws when it does not decode. */
interface ValueDecoder {
  decode(bytes: Uint8Array): unknown;
}

/**
 * A str whose bytes are not UTF-8 is no text: it does not decode, as a lone surrogate does not bind
 * (well-formed.ts), so it fails the invocation in arguments and closes the connection in the envelope.
 */
class NotUtf8Error extends Error {
  constructor() {
    super('a str holds bytes that are not UTF-8');
    this.name = 'NotUtf8Error';
  }
}

function decoderFor(maxMessageSize: number): ValueDecoder {
  // Every element takes at least one byte, so no length in a valid message exceeds its size.
  const decoder = new Decoder({
    maxStrLength: maxMessageSize,
    maxBinLength: maxMessageSize,
    maxArrayLength: maxMessageSize,
    maxMapLength: maxMessageSize,
    maxExtLength: maxMessageSize,
  });
  return {
    decode: (bytes) => {
      // Broken bytes (undefined) are left to the decoder, which says what broke.
      if (strsAreUtf8(bytes) === false) throw new NotUtf8Error();
      return decoder.decode(bytes);
    },
  };
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

function need(items: unknown[], count: number, what: string): void {
  if (items.length < count) throw new InvalidDataError(`Invalid payload for ${what} message.`);
}

/** ASP.NET's reader refuses empty header names and values, as it refuses nil ones. */
function headersAt(items: unknown[]): MessageHeaders {
  const v = items[1];
  if (!isMap(v) || !Object.entries(v).every(([key, x]) => key !== '' && typeof x === 'string' && x !== '')) {
    throw new InvalidDataError('Invalid headers: expected a map of non-empty strings.');
  }
  return v as MessageHeaders;
}

function stringAt(items: unknown[], index: number, name: string): string {
  const v = items[index];
  if (typeof v !== 'string') throw new InvalidDataError(`Reading '${name}' as String failed.`);
  return v;
}

/**
 * A target, or the id of a message that refers to an invocation: ASP.NET's MessagePack reader refuses
 * an empty one as it refuses nil (ThrowIfNullOrEmpty), which closes the connection.
 */
function nonEmptyAt(items: unknown[], index: number, name: string): string {
  const v = stringAt(items, index, name);
  if (v === '') throw new InvalidDataError(`Null or empty '${name}'.`);
  return v;
}

function arrayAt(items: unknown[], index: number, name: string): unknown[] {
  const v = items[index];
  if (!Array.isArray(v)) throw new InvalidDataError(`Reading array length for '${name}' failed.`);
  return v;
}

function streamIdsAt(items: unknown[]): string[] | undefined {
  if (items.length < 6) return undefined;
  const ids = arrayAt(items, 5, 'streamIds');
  if (!ids.every((id) => typeof id === 'string' && id !== '')) throw new InvalidDataError("Reading 'streamIds' failed.");
  return ids as string[];
}

const NO_STREAM_IDS: { streamIds?: string[]; streamIdsFailure?: string } = Object.freeze({ streamIds: undefined });

/**
 * The stream ids, or why they cannot be read: ASP.NET reads them after binding the arguments to the
 * method, and not at all when that fails (an unknown method, a wrong count or type), so unreadable ones
 * are the dispatcher's to judge (streamIdsFailure), not a reason to close here.
 */
function streamIdsOf(items: unknown[]): { streamIds?: string[]; streamIdsFailure?: string } {
  // Most invocations (every SendAudioData of the official clients) carry none: nothing to make per message.
  if (items.length < 6) return NO_STREAM_IDS;
  try {
    return { streamIds: streamIdsAt(items) };
  } catch (e) {
    if (e instanceof InvalidDataError) return { streamIdsFailure: e.message };
    throw e;
  }
}

/**
 * A missing id reads as a failed Int64 too, as in ASP.NET (`[8]` and `[8, nil]` alike). Its format and
 * range are judged on the bytes (requireWireFormats): past 2^53 the number is the nearest double, which
 * acknowledges, or is past, all there is as the exact id would.
 */
function sequenceIdAt(items: unknown[]): number {
  const v = items[1];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new InvalidDataError("Reading 'sequenceId' as Int64 failed.");
  return v;
}

/**
 * Arguments as ASP.NET's MessagePack protocol binds them: after the envelope and on their own, so
 * arguments that are not an array (or, see decodeItemsSeparately, do not decode) fail only the
 * invocation. `failure` is set when they could not even be decoded.
 */
function argumentsAt(items: unknown[], failure: BindingFailure | undefined): { arguments: unknown[]; bindingFailure?: BindingFailure } {
  if (failure !== undefined) return { arguments: [], bindingFailure: failure };
  const v = items[4];
  if (!Array.isArray(v)) return { arguments: [], bindingFailure: "Reading array length for 'arguments' failed." };
  // How deep they nest was checked in the bytes, before anything was decoded (deepItems).
  return { arguments: v };
}

/** ASP.NET reads the error as a string that may be nil: a completion with no error text, not a broken message. */
function errorCompletion(headers: MessageHeaders, invocationId: string, error: unknown): HubMessage {
  if (error === null) return { type: MessageType.Completion, headers, invocationId, hasResult: false };
  if (typeof error !== 'string') throw new InvalidDataError("Reading 'error' as String failed.");
  return { type: MessageType.Completion, headers, invocationId, error, hasResult: false };
}

export function decodeMessagePackItems(items: unknown, argumentsFailure?: BindingFailure): HubMessage | null {
  if (!Array.isArray(items) || items.length === 0) throw new InvalidDataError('Invalid payload: expected a non-empty array.');
  const type = items[0];
  if (typeof type !== 'number' || !Number.isInteger(type) || type < -(2 ** 31) || type >= 2 ** 31) {
    throw new InvalidDataError("Reading 'type' as Int32 failed.");
  }
  switch (type) {
    case MessageType.Invocation: {
      // Four items are an invocation whose arguments do not bind (argumentsAt), as in ASP.NET.
      need(items, 4, 'Invocation');
      const id = items[2];
      if (id !== null && typeof id !== 'string') throw new InvalidDataError("Reading 'invocationId' as String failed.");
      const headers = headersAt(items);
      const target = nonEmptyAt(items, 3, 'target');
      const args = argumentsAt(items, argumentsFailure);
      return {
        type: MessageType.Invocation,
        headers,
        ...(typeof id === 'string' ? { invocationId: id } : {}),
        target,
        ...args,
        ...(args.bindingFailure === undefined ? streamIdsOf(items) : {}),
      };
    }
    case MessageType.StreamInvocation: {
      need(items, 4, 'StreamInvocation');
      const headers = headersAt(items);
      const invocationId = nonEmptyAt(items, 2, 'invocationId');
      const target = nonEmptyAt(items, 3, 'target');
      const args = argumentsAt(items, argumentsFailure);
      return {
        type: MessageType.StreamInvocation,
        headers,
        invocationId,
        target,
        ...args,
        ...(args.bindingFailure === undefined ? streamIdsOf(items) : {}),
      };
    }
    case MessageType.StreamItem:
      need(items, 4, 'StreamItem');
      return { type: MessageType.StreamItem, headers: headersAt(items), invocationId: nonEmptyAt(items, 2, 'invocationId'), item: items[3] };
    case MessageType.Completion: {
      need(items, 4, 'Completion');
      const headers = headersAt(items);
      const invocationId = nonEmptyAt(items, 2, 'invocationId');
      switch (items[3]) {
        case ResultKind.Error:
          need(items, 5, 'Completion');
          return errorCompletion(headers, invocationId, items[4]);
        case ResultKind.Void:
          return { type: MessageType.Completion, headers, invocationId, hasResult: false };
        case ResultKind.NonVoid:
          need(items, 5, 'Completion');
          return { type: MessageType.Completion, headers, invocationId, result: items[4], hasResult: true };
        default:
          throw new InvalidDataError('Invalid invocation result kind.');
      }
    }
    case MessageType.CancelInvocation:
      need(items, 3, 'CancelInvocation');
      return { type: MessageType.CancelInvocation, headers: headersAt(items), invocationId: nonEmptyAt(items, 2, 'invocationId') };
    case MessageType.Ping:
      return { type: MessageType.Ping };
    case MessageType.Close: {
      need(items, 2, 'Close');
      const error = items[1];
      if (error !== null && typeof error !== 'string') throw new InvalidDataError("Reading 'error' as String failed.");
      const allowReconnect = items.length >= 3 ? items[2] : undefined;
      if (allowReconnect !== undefined && typeof allowReconnect !== 'boolean') {
        throw new InvalidDataError("Reading 'allowReconnect' as Boolean failed.");
      }
      return { type: MessageType.Close, ...(typeof error === 'string' ? { error } : {}), ...(allowReconnect ? { allowReconnect } : {}) };
    }
    case MessageType.Ack:
      return { type: MessageType.Ack, sequenceId: sequenceIdAt(items) };
    case MessageType.Sequence:
      return { type: MessageType.Sequence, sequenceId: sequenceIdAt(items) };
    default:
      return null;
  }
}

export function messagePackItems(message: HubMessage): unknown[] {
  switch (message.type) {
    case MessageType.Invocation:
    case MessageType.StreamInvocation: {
      // Always six items, the stream ids empty when there are none: ASP.NET Core writes them so, and
      // clients that index the sixth item (Python's signalrcore) drop a five-item Invocation.
      const args = hasBase64Text(message.arguments) ? message.arguments.map((a) => (a instanceof Base64Text ? a.text : a)) : message.arguments;
      return [message.type, message.headers ?? {}, message.invocationId ?? null, message.target, args, message.streamIds ?? []];
    }
    case MessageType.StreamItem:
      return [message.type, message.headers ?? {}, message.invocationId, message.item];
    case MessageType.Completion:
      if (message.error !== undefined) return [message.type, message.headers ?? {}, message.invocationId, ResultKind.Error, message.error];
      if (message.hasResult) return [message.type, message.headers ?? {}, message.invocationId, ResultKind.NonVoid, message.result ?? null];
      return [message.type, message.headers ?? {}, message.invocationId, ResultKind.Void];
    case MessageType.CancelInvocation:
      return [message.type, message.headers ?? {}, message.invocationId];
    case MessageType.Ping:
      return [message.type];
    case MessageType.Close:
      return [message.type, message.error ?? null, message.allowReconnect === true];
    case MessageType.Ack:
    case MessageType.Sequence:
      return [message.type, message.sequenceId];
  }
}

export function encodeMessagePackMessage(message: HubMessage): Uint8Array {
  const items = messagePackItems(message);
  // What msgpack-writer.ts leaves to the library: a view into the encoder's own buffer, valid until its
  // next encode, which writeBinaryMessage copies once, with the length prefix.
  return writeMessagePackFrame(items) ?? writeBinaryMessage(encoder.encodeSharedRef(items));
}

const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e));
/** Where the bytes broke, without the prefix a walker's error already carries. */
const breakOf = (e: unknown): string => (e instanceof MalformedMessagePackError ? e.detail : describe(e));
/** The protocol error for a break: the walker's own errors already say what they are; a decoder's is named here. */
const protocolErrorOf = (e: unknown): InvalidDataError => (e instanceof InvalidDataError ? e : new InvalidDataError(`Invalid MessagePack: ${describe(e)}`));

const isInvocationType = (type: unknown): boolean => type === MessageType.Invocation || type === MessageType.StreamInvocation;

/**
 * Whether ASP.NET's reader reads item `index` of a message of `type` at all (decodes, binds or skips
 * it), given the items before it: it reads each type's items by position, in order, and never looks
 * at the rest, nor at bytes after them.
 */
function readsItem(type: unknown, index: number, items: readonly unknown[]): boolean {
  switch (type) {
    case MessageType.Invocation:
    case MessageType.StreamInvocation:
      // The stream ids too, once the arguments were read: the walk stops at arguments that were not.
      return index <= 5;
    case MessageType.Completion:
      return index <= 3 || (index === 4 && (items[3] === ResultKind.Error || items[3] === ResultKind.NonVoid));
    case MessageType.StreamItem:
      return index <= 3;
    case MessageType.CancelInvocation:
    case MessageType.Close:
      return index <= 2;
    case MessageType.Ack:
    case MessageType.Sequence:
      return index <= 1;
    default:
      // A Ping or an unknown type: nothing after the type is read.
      return index === 0;
  }
}

/**
 * Whether a value of item `index` that does not decode breaks the message: ASP.NET reads it as part of
 * the envelope. Those it only binds or skips (an invocation's arguments, a stream item, the result of a
 * completion the hub never asked for) fail that message alone, or nothing.
 */
function readStrictly(type: unknown, index: number, items: readonly unknown[]): boolean {
  if (index === 0) return true;
  switch (type) {
    case MessageType.Invocation:
    case MessageType.StreamInvocation:
      return index !== ARGUMENTS;
    case MessageType.Completion:
      return index <= 3 || items[3] === ResultKind.Error;
    case MessageType.StreamItem:
      return index <= 2;
    default:
      return true;
  }
}

/** The items of the longest message ASP.NET reads (an Invocation: type, headers, id, target, arguments, stream ids). */
const ITEMS_READ = 6;

/** Where an invocation's arguments are among a message's items. */
const ARGUMENTS = 4;

/** Where a stream item's value is among its items: bound on its own, as arguments are. */
const STREAM_ITEM_VALUE = 3;

/** Items of a message that are not to be decoded (by index), and why. */
type Undecoded = ReadonlyMap<number, string>;

/**
 * The items read (ITEMS_READ) that nest more than MAX_MESSAGEPACK_DEPTH maps and arrays (an
 * invocation's arguments one more: each argument is read from depth 0 inside them), found in the bytes
 * before the message is decoded, so that no level past the limit is ever built; undefined when the
 * message can be decoded whole: it nests no deeper than that anywhere (a message shorter than the
 * limit cannot), or only within the limits of the items it has and no others. A broken one, or one
 * with more items than are read, is read item by item (an empty map says so).
 */
function deepItems(body: Uint8Array, decoder: ValueDecoder): Undecoded | undefined {
  try {
    if (body.length <= MAX_MESSAGEPACK_DEPTH || !nestsDeeperAt(body, 0, MAX_MESSAGEPACK_DEPTH + 1)) return undefined;
  } catch {
    // Broken before it got that deep: the decoder fails there too, having built no more than the walk read.
    return undefined;
  }
  const failed = new Map<number, string>();
  let invocation = false;
  try {
    const { count, first } = arrayHeader(body);
    let pos = first;
    for (let i = 0; i < Math.min(count, ITEMS_READ); i++) {
      // Depth first: it stops at the limit, where skipping a broken item would read its levels to the break.
      const levels = MAX_MESSAGEPACK_DEPTH + (invocation && i === ARGUMENTS ? 1 : 0);
      const deep = nestsDeeperAt(body, pos, levels);
      const end = skipValue(body, pos);
      if (deep) {
        failed.set(i, i === ARGUMENTS && invocation ? `The arguments nest more than ${MAX_MESSAGEPACK_DEPTH} maps and arrays.` : `item ${i} nests more than ${MAX_MESSAGEPACK_DEPTH} maps and arrays`);
      } else if (i === 0) {
        let type: unknown;
        try {
          type = decoder.decode(body.subarray(pos, end));
        } catch {
          // decodeItemsSeparately refuses it.
        }
        invocation = isInvocationType(type);
      }
      pos = end;
    }
    // Items past those read are never decoded: one of them is where it nests too deep.
    if (count > ITEMS_READ) return failed;
  } catch {
    // decodeItemsSeparately reads as far as the structure holds, and judges the break where it is.
    return failed;
  }
  return failed.size > 0 ? failed : undefined;
}

/**
 * The message read item by item, as ASP.NET's reader reads it, because the whole did not decode or
 * nests too deep somewhere (deepItems): only the items its type reads, in order (readsItem), each
 * judged on its own. A value that does not decode, or does not even hold together (truncated, a byte
 * MessagePack does not define, too many levels), is a binding failure of the invocation in its
 * arguments (what follows them is not read), a failed stream item in a stream item, nothing in the
 * result of a completion the hub never asked for unless it does not hold together, and a protocol
 * error anywhere else. Items past those the type reads, and bytes after the array, change nothing.
 */
function decodeItemsSeparately(body: Uint8Array, decoder: ValueDecoder, cause: { readonly error: unknown } | { readonly deep: Undecoded }): HubMessage | null {
  // The depth limit for an item it marked, else what the decoder said of the item, or of the whole.
  const why = (i: number, e: unknown): string => ('deep' in cause ? cause.deep.get(i) : undefined) ?? describe(e ?? ('error' in cause ? cause.error : `item ${i} does not decode`));
  let header: { readonly count: number; readonly first: number };
  try {
    header = arrayHeader(body);
  } catch (e) {
    throw protocolErrorOf(e);
  }
  const items: unknown[] = [];
  let argumentsFailure: BindingFailure | undefined;
  let pos = header.first;
  for (let i = 0; i < Math.min(header.count, ITEMS_READ) && readsItem(items[0], i, items); i++) {
    const bound = isInvocationType(items[0]) && i === ARGUMENTS;
    let end: number;
    try {
      end = skipValue(body, pos);
    } catch (e) {
      if (bound) {
        argumentsFailure = `Invalid MessagePack in 'arguments': ${breakOf(e)}`;
        break;
      }
      if (items[0] === MessageType.StreamItem && i === STREAM_ITEM_VALUE) {
        // Bound on its own, as ASP.NET does (a failed stream item); this hub takes no client streams anyway.
        items.push(null);
        break;
      }
      throw protocolErrorOf(e);
    }
    let value: unknown = null;
    const tooDeep = 'deep' in cause && cause.deep.has(i);
    let decoded = !tooDeep;
    let failure: unknown;
    if (decoded) {
      try {
        value = decoder.decode(body.subarray(pos, end));
      } catch (e) {
        decoded = false;
        failure = e;
      }
    }
    if (!decoded) {
      if (bound) {
        argumentsFailure = tooDeep ? why(i, failure) : `Invalid MessagePack in 'arguments': ${why(i, failure)}`;
        break;
      }
      if (readStrictly(items[0], i, items)) throw new InvalidDataError(`Invalid MessagePack: ${why(i, failure)}`);
    }
    items.push(value);
    pos = end;
  }
  return decodeMessagePackItems(items, argumentsFailure);
}

/**
 * What the decoded values cannot show. The integers ASP.NET reads with ReadInt32/ReadInt64 (the type,
 * a sequence id, a result kind) must come in an integer format: MessagePack-CSharp refuses a float
 * there, even 1.0, and so the message; a sequence id must be in Int64's range too. Header names are read with ReadString: a number is refused.
 */
function requireWireFormats(body: Uint8Array, message: HubMessage | null): void {
  if (isIntegerItem(body, 0) === false) throw new InvalidDataError("Reading 'type' as Int32 failed.");
  const type = message?.type;
  if ((type === MessageType.Ack || type === MessageType.Sequence) && isInt64Item(body, 1) === false) {
    throw new InvalidDataError("Reading 'sequenceId' as Int64 failed.");
  }
  if (type === MessageType.Completion && isIntegerItem(body, 3) === false) throw new InvalidDataError("Reading 'resultKind' as Int32 failed.");
  // Header names are read as strings too: a number there is no name.
  if (message !== null && 'headers' in message && mapKeysAreStrings(body, 1) === false) throw new InvalidDataError("Reading 'headers' key as String failed.");
}

/** A MessagePack protocol whose decoder limits lengths to `maxMessageSize`. */
export function createMessagePackProtocol(maxMessageSize: number): HubProtocol {
  const decoder = decoderFor(maxMessageSize);
  return {
    name: 'messagepack',
    binary: true,
    read: readBinaryMessage,
    decode: (body) => {
      let message: HubMessage | null;
      const deep = deepItems(body, decoder);
      if (deep !== undefined) message = decodeItemsSeparately(body, decoder, { deep });
      else {
        try {
          message = decodeMessagePackItems(decoder.decode(body));
        } catch (e) {
          if (e instanceof InvalidDataError) throw e;
          message = decodeItemsSeparately(body, decoder, { error: e });
        }
      }
      requireWireFormats(body, message);
      requireWellFormedEnvelope(message);
      return message;
    },
    // bin values come back as views into the body.
    decodesViews: true,
    encode: encodeMessagePackMessage,
  };
}
