// The members of a hub message's own object, found in its text: what the integer and duplicate checks
// read where JSON.parse has already thrown the difference away.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isIntegerToken, topLevelMembers } from '../../src/hub/json-members.js';

const pairs = (text: string): [string, string][] => topLevelMembers(text).map((m) => [m.name, m.value]);

describe('topLevelMembers', () => {
  it('gives each member of the outer object with its value as written, nested ones skipped', () => {
    const text = ' {\n"type" : 1.0 ,"arguments":[{"type":2,"s":"a]}\\"}"},[3e0]],"headers":{"k":"v"},"n":null,"b":true}';
    assert.deepEqual(pairs(text), [['type', '1.0'], ['arguments', '[{"type":2,"s":"a]}\\"}"},[3e0]]'], ['headers', '{"k":"v"}'], ['n', 'null'], ['b', 'true']]);
  });

  it('keeps every occurrence of a name, in order', () => {
    assert.deepEqual(pairs('{"type":"x","target":"E","type":1}'), [['type', '"x"'], ['target', '"E"'], ['type', '1']]);
  });

  it('resolves escapes in names, as the reader compares them', () => {
    assert.deepEqual(pairs('{"t\\u0079pe":6,"a\\\\":1}'), [['type', '6'], ['a\\', '1']]);
  });

  it('ends with the object: what follows it in the record is not read', () => {
    assert.deepEqual(pairs('{"type":6}\u0000{"type":1.0}'), [['type', '6']]);
    assert.deepEqual(pairs('{}'), []);
    assert.deepEqual(pairs('[1]'), []);
  });

  it('skips a string ending in escaped backslashes', () => {
    assert.deepEqual(pairs('{"a":"x\\\\\\\\","type":1e0}'), [['a', '"x\\\\\\\\"'], ['type', '1e0']]);
  });
});

describe('isIntegerToken', () => {
  const cases: [string, boolean][] = [['0', true], ['-0', true], ['123', true], ['-2147483648', true], ['1.0', false], ['1e0', false], ['1E+0', false], ['-1.5', false], ['"1"', false], ['null', false]];
  for (const [token, expected] of cases) it(`${token}: ${expected}`, () => assert.equal(isIntegerToken(token), expected));
});
