// The dispatcher's checks and completions, with ASP.NET's wording for every error the client sees.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../src/log/logger.js';
import { HubDispatcher } from '../../src/hub/dispatcher.js';
import { HubError } from '../../src/hub/errors.js';
import type { InvocationMessage, StreamInvocationMessage } from '../../src/hub/messages.js';
import type { HubCallContext } from '../../src/hub/types.js';

const ctx: HubCallContext = {
  connectionId: 'c1',
  protocol: 'json',
  joinGroup: () => {},
  leaveGroup: () => {},
  isInGroup: () => false,
  sendToCaller: () => {},
};

const dispatcher = new HubDispatcher(
  {
    Add: { args: 2, handler: (_c, [a, b]) => (a as number) + (b as number) },
    Later: { args: 0, handler: async () => 'done' },
    Void: { args: 0, handler: () => undefined },
    Refuse: { args: 0, handler: () => { throw new HubError('not allowed'); } },
    Bug: { args: 0, handler: () => { throw new TypeError('x is undefined'); } },
    RejectBug: { args: 0, handler: () => Promise.reject(new Error('db down')) },
    ThrowString: { args: 0, handler: () => { throw 'plain string'; } },
  },
  silentLogger,
);

/** `invocationId` null: a non-blocking invocation. */
const call = (target: string, args: unknown[], invocationId: string | null = '1', extra: Partial<InvocationMessage> = {}) =>
  dispatcher.invoke(ctx, { type: 1, target, arguments: args, ...(invocationId !== null ? { invocationId } : {}), ...extra });

describe('dispatcher', () => {
  const table: [string, string, unknown[], { result?: unknown; error?: string }][] = [
    ['result', 'Add', [2, 3], { result: 5 }],
    ['case-insensitive name', 'aDD', [2, 3], { result: 5 }],
    ['async result', 'Later', [], { result: 'done' }],
    ['void result is null, as ASP.NET sends it', 'Void', [], { result: null }],
    ['unknown method', 'Nope', [], { error: "Failed to invoke 'Nope' due to an error on the server. HubException: Method does not exist." }],
    ['too few arguments', 'Add', [1], { error: "Failed to invoke 'Add' due to an error on the server." }],
    ['too many arguments', 'add', [1, 2, 3], { error: "Failed to invoke 'add' due to an error on the server." }],
    ['HubError message reaches the caller', 'Refuse', [], { error: "An unexpected error occurred invoking 'Refuse' on the server. HubException: not allowed" }],
    ['other errors are hidden', 'Bug', [], { error: "An unexpected error occurred invoking 'Bug' on the server." }],
    ['rejections are hidden', 'RejectBug', [], { error: "An unexpected error occurred invoking 'RejectBug' on the server." }],
    ['thrown non-errors are hidden', 'ThrowString', [], { error: "An unexpected error occurred invoking 'ThrowString' on the server." }],
  ];
  for (const [name, target, args, expected] of table) {
    it(name, async () => {
      const completion = await call(target, args);
      assert.ok(completion);
      assert.equal(completion.invocationId, '1');
      assert.deepEqual({ result: completion.result, error: completion.error }, { result: expected.result, error: expected.error });
      assert.equal(completion.hasResult, expected.error === undefined);
    });
  }

  it('non-blocking invocations never get a completion, success or failure', async () => {
    assert.equal(await call('Add', [1, 2], null), undefined);
    assert.equal(await call('Bug', [], null), undefined);
    assert.equal(await call('Nope', [], null), undefined);
    assert.equal(await call('Add', [1, 2], ''), undefined, 'an empty id counts as none');
  });

  it('refuses streaming invocations and client streams as ASP.NET does', async () => {
    const stream: StreamInvocationMessage = { type: 4, invocationId: '5', target: 'Add', arguments: [1, 2] };
    assert.equal((await dispatcher.invoke(ctx, stream))?.error, "The client attempted to invoke the non-streaming 'Add' method with a streaming invocation.");
    assert.equal(
      (await call('Add', [1, 2], '6', { streamIds: ['a'] }))?.error,
      "An unexpected error occurred invoking 'Add' on the server. HubException: Client sent 1 stream(s), Hub method expects 0.",
    );
  });

  it('refuses a method table with names differing only in case', () => {
    assert.throws(() => new HubDispatcher({ a: { args: 0, handler: () => 1 }, A: { args: 0, handler: () => 2 } }, silentLogger));
  });
});
