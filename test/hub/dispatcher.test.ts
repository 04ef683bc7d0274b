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
  groups: () => [],
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
    Typed: { args: ['string', 'number', 'boolean', 'bytes', 'any'], handler: (_c, args) => args.map((a) => (a instanceof Uint8Array ? [...a] : a)) },
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

  describe('binding declared parameter types (the same for both protocols)', () => {
    const BINDING = "Failed to invoke 'Typed' due to an error on the server.";
    const good: [string, unknown[], unknown[]][] = [
      ['values of each type', ['s', 1.5, true, Uint8Array.from([1, 2]), { x: 1 }], ['s', 1.5, true, [1, 2], { x: 1 }]],
      ['null for a string and for bytes, as .NET reference types', [null, 0, false, null, null], [null, 0, false, null, null]],
      ['bytes as Base64 text (the JSON mapping)', ['', -1, true, 'AAEC+g==', []], ['', -1, true, [0, 1, 2, 250], []]],
    ];
    for (const [name, args, result] of good) {
      it(name, async () => assert.deepEqual((await call('Typed', args))?.result, result));
    }
    const bad: [string, unknown[]][] = [
      ['a number for a string', [1, 1, true, null, 0]],
      ['an object for a string', [{}, 1, true, null, 0]],
      ['text for a number', ['s', '1', true, null, 0]],
      ['null for a number', ['s', null, true, null, 0]],
      ['a number for a boolean', ['s', 1, 1, null, 0]],
      ['invalid Base64 for bytes', ['s', 1, true, 'not base64!', 0]],
      ['a number for bytes', ['s', 1, true, 7, 0]],
      ['one argument short', ['s', 1, true, null]],
    ];
    for (const [name, args] of bad) {
      it(`${name}: a completion error`, async () => assert.equal((await call('Typed', args))?.error, BINDING));
    }
    it('arguments the protocol could not read: a completion error, the method never runs', async () => {
      const completion = await call('Typed', [], '1', { bindingFailure: "Invalid MessagePack in 'arguments'" });
      assert.equal(completion?.error, BINDING);
    });
    it('an unknown method still says so first', async () => {
      assert.equal((await call('Nope', [], '1', { bindingFailure: 'x' }))?.error, "Failed to invoke 'Nope' due to an error on the server. HubException: Method does not exist.");
    });
  });

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

  it('refuses parameter types it does not know', () => {
    assert.throws(() => new HubDispatcher({ a: { args: ['strin' as 'string'], handler: () => 1 } }, silentLogger), /invalid parameters/);
    assert.throws(() => new HubDispatcher({ a: { args: -1, handler: () => 1 } }, silentLogger), /invalid parameters/);
  });
});
