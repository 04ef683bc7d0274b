// Runs invocations against the method table and produces their completion, with ASP.NET's checks in
// ASP.NET's order: the method exists (case-insensitive), the arguments bind (binder.ts: readable,
// count, types), it is not a streaming call, no client streams; then the method runs. Invocations without an id never get a
// completion (SignalR's hub protocol: non-blocking invocations).
import type { Logger } from '../log/logger.js';
import { HUB_PARAMETERS, bindArguments } from './binder.js';
import { ErrorText, HubError } from './errors.js';
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

interface NamedEntry extends HubMethodEntry {
  readonly name: string;
}

export class HubDispatcher {
  private readonly methods = new Map<string, NamedEntry>();

  constructor(methods: Readonly<Record<string, HubMethodEntry>>, private readonly logger: Logger) {
    for (const [name, entry] of Object.entries(methods)) {
      const key = name.toLowerCase();
      if (this.methods.has(key)) throw new Error(`hub method '${name}' is defined twice (names are case-insensitive)`);
      const valid = typeof entry.args === 'number' ? Number.isInteger(entry.args) && entry.args >= 0 : entry.args.every((p) => HUB_PARAMETERS.includes(p));
      if (!valid) throw new Error(`hub method '${name}' has invalid parameters`);
      this.methods.set(key, { ...entry, name });
    }
  }

  /** Resolves to the completion to send, or undefined for non-blocking invocations. Never rejects. */
  async invoke(ctx: HubCallContext, message: InvocationMessage | StreamInvocationMessage): Promise<CompletionMessage | undefined> {
    const { target } = message;
    // An empty id counts as none, as in ASP.NET (string.IsNullOrEmpty).
    const id = message.invocationId || undefined;
    const fail = (error: string): CompletionMessage | undefined => (id === undefined ? undefined : completionWithError(id, error));

    const entry = this.methods.get(target.toLowerCase());
    if (!entry) {
      this.logger.debug(`unknown hub method '${target}' from ${ctx.connectionId}`);
      return fail(ErrorText.unknownMethod(target));
    }
    const binding = message.bindingFailure === undefined ? bindArguments(entry.args, message.arguments) : { failure: message.bindingFailure };
    if ('failure' in binding) {
      this.logger.debug(`'${target}' from ${ctx.connectionId}: arguments do not bind: ${binding.failure}`);
      return fail(ErrorText.bindingFailure(target));
    }
    // Ill-formed text (a lone UTF-16 surrogate) does not bind: ASP.NET's JSON reader cannot read it as a string either.
    const illFormed = illFormedTextPaths(message.arguments)[0];
    if (illFormed !== undefined) {
      this.logger.debug(`'${target}' from ${ctx.connectionId}: argument ${illFormed.join('.')} ${ILL_FORMED_TEXT}`);
      return fail(ErrorText.bindingFailure(target));
    }
    if (message.type === MessageType.StreamInvocation) return fail(ErrorText.streamingInvocationOfNonStreamingMethod(target));
    const streams = message.streamIds?.length ?? 0;
    if (streams > 0) return fail(ErrorText.clientStreams(target, streams));

    let result: unknown;
    try {
      result = await entry.handler(ctx, binding.args);
    } catch (e) {
      if (e instanceof HubError) {
        this.logger.debug(`'${entry.name}' from ${ctx.connectionId} failed: ${e.message}`);
        return fail(ErrorText.invocationFailed(target, e.message));
      }
      // Not meant for the client: a bug or an unexpected failure. Details stay in the log.
      this.logger.error(`'${entry.name}' from ${ctx.connectionId} threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      return fail(ErrorText.invocationFailed(target));
    }
    // A void method completes with a null result, as ASP.NET's CompletionMessage.WithResult does.
    return id === undefined ? undefined : completionWithResult(id, result === undefined ? null : result);
  }
}
