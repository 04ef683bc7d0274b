// Runs invocations against the method table and produces their completion, with ASP.NET's checks in
// ASP.NET's order: the method exists (case-insensitive), the arguments bind (binder.ts: readable,
// count, types), it is not a streaming call, no client streams; then the method runs. Invocations without an id never get a
// completion (SignalR's hub protocol: non-blocking invocations).
import type { Logger } from '../log/logger.js';
import { HUB_PARAMETERS, bindArguments } from './binder.js';
import { ErrorText, HubError, InvalidDataError } from './errors.js';
import {
  MessageType,
  completionWithError,
  completionWithResult,
  type CompletionMessage,
  type InvocationMessage,
  type StreamInvocationMessage,
} from './messages.js';
import type { HubCallContext, HubMethodEntry } from './types.js';
import { ILL_FORMED_TEXT, illFormedTextPaths } from '../well-formed.js';
import { caseKey } from '../ignore-case.js';

interface NamedEntry extends HubMethodEntry {
  readonly name: string;
}

export class HubDispatcher {
  /** By lower-case name. */
  private readonly methods = new Map<string, NamedEntry>();
  /** By the name as declared: what clients send, found without lower-casing it. */
  private readonly declared = new Map<string, NamedEntry>();

  constructor(methods: Readonly<Record<string, HubMethodEntry>>, private readonly logger: Logger) {
    for (const [name, entry] of Object.entries(methods)) {
      const key = caseKey(name);
      if (this.methods.has(key)) throw new Error(`hub method '${name}' is defined twice (names are case-insensitive)`);
      const valid = typeof entry.args === 'number' ? Number.isInteger(entry.args) && entry.args >= 0 : entry.args.every((p) => HUB_PARAMETERS.includes(p));
      if (!valid) throw new Error(`hub method '${name}' has invalid parameters`);
      const named = { ...entry, name };
      this.methods.set(key, named);
      this.declared.set(name, named);
    }
  }

  /**
   * The completion to send, or undefined for non-blocking invocations; a promise of it only when the
   * method returns one. A method that returns at once (SendAudioData, per packet) completes in the same
   * call, with no promise and no microtask. Throws only InvalidDataError, before the method runs, for
   * stream ids the protocol could not read (streamIdsFailure); never rejects.
   */
  invoke(ctx: HubCallContext, message: InvocationMessage | StreamInvocationMessage): CompletionMessage | undefined | Promise<CompletionMessage | undefined> {
    const { target } = message;
    // An empty id counts as none, as in ASP.NET (string.IsNullOrEmpty).
    const id = message.invocationId || undefined;

    const entry = this.declared.get(target) ?? this.methods.get(caseKey(target));
    if (!entry) {
      this.logger.debug(`unknown hub method '${target}' from ${ctx.connectionId}`);
      return failure(id, ErrorText.unknownMethod(target));
    }
    const binding = message.bindingFailure === undefined ? bindArguments(entry.args, message.arguments) : { failure: message.bindingFailure };
    if ('failure' in binding) {
      this.logger.debug(`'${target}' from ${ctx.connectionId}: arguments do not bind: ${binding.failure}`);
      return failure(id, ErrorText.bindingFailure(target));
    }
    // Ill-formed text (a lone UTF-16 surrogate) does not bind: ASP.NET's JSON reader cannot read it as a string either.
    const illFormed = illFormedTextPaths(message.arguments, 1)[0];
    if (illFormed !== undefined) {
      this.logger.debug(`'${target}' from ${ctx.connectionId}: argument ${illFormed.join('.')} ${ILL_FORMED_TEXT}`);
      return failure(id, ErrorText.bindingFailure(target));
    }
    // The arguments bound, so ASP.NET's reader goes on to the stream ids: unreadable ones are a protocol
    // error, thrown for the reader to close the connection with (before any completion, as there).
    if (message.streamIdsFailure !== undefined) throw new InvalidDataError(message.streamIdsFailure);
    if (message.type === MessageType.StreamInvocation) return failure(id, ErrorText.streamingInvocationOfNonStreamingMethod(target));
    const streams = message.streamIds?.length ?? 0;
    if (streams > 0) return failure(id, ErrorText.clientStreams(target, streams));

    let result: unknown;
    try {
      result = entry.handler(ctx, binding.args);
    } catch (e) {
      return this.failed(ctx, entry, target, id, e);
    }
    if (!isThenable(result)) return completed(id, result);
    return Promise.resolve(result).then((value) => completed(id, value), (e: unknown) => this.failed(ctx, entry, target, id, e));
  }

  private failed(ctx: HubCallContext, entry: NamedEntry, target: string, id: string | undefined, e: unknown): CompletionMessage | undefined {
    if (e instanceof HubError) {
      this.logger.debug(`'${entry.name}' from ${ctx.connectionId} failed: ${e.message}`);
      return failure(id, ErrorText.invocationFailed(target, e.message));
    }
    // Not meant for the client: a bug or an unexpected failure. Details stay in the log.
    this.logger.error(`'${entry.name}' from ${ctx.connectionId} threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return failure(id, ErrorText.invocationFailed(target));
  }
}

const failure = (id: string | undefined, error: string): CompletionMessage | undefined => (id === undefined ? undefined : completionWithError(id, error));

// A void method completes with a null result, as ASP.NET's CompletionMessage.WithResult does.
const completed = (id: string | undefined, result: unknown): CompletionMessage | undefined =>
  id === undefined ? undefined : completionWithResult(id, result === undefined ? null : result);

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
