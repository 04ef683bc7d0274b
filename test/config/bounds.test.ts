// What a configuration costs is bounded by what it is, not by what was typed: nesting is refused past
// .NET's limit (every walk of the values recursed per level, and 2,500 levels overflowed the stack), a
// report lists the first problems and counts the rest (200,000 problems overflowed a spread, and a
// spelling hint for each of 30,000 unknown keys took 14 s), and names are quoted cut short.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { MAX_LISTED_PROBLEMS } from '../../src/config/problems.js';
import { closest } from '../../src/config/spelling.js';
import { MAX_JSON_DEPTH } from '../../src/json-depth.js';
import { configFile, problemsOf } from './helpers.js';

const DEPTH_REASON = `invalid JSON: objects and arrays nested more than ${MAX_JSON_DEPTH} deep (.NET refuses them too)`;

/** `{"Server": {"a": {"a": ... 1}}}` with `levels` objects in all, the outermost included. */
const nestedObjects = (levels: number): string => `{"Server":${'{"a":'.repeat(levels - 1)}1${'}'.repeat(levels - 1)}}`;

describe('nesting', () => {
  it(`${MAX_JSON_DEPTH} levels are read (and judged as keys); one more is refused at its bracket`, () => {
    const file = configFile(nestedObjects(MAX_JSON_DEPTH));
    assert.deepEqual(problemsOf({ file }), [`Server.a: unknown key from file ${file}`]);
    const deeper = configFile(nestedObjects(MAX_JSON_DEPTH + 1));
    const column = '{"Server":'.length + '{"a":'.repeat(MAX_JSON_DEPTH - 1).length + 1;
    assert.deepEqual(problemsOf({ file: deeper }), [`${deeper}:1:${column}: ${DEPTH_REASON}`]);
  });

  it('100,000 levels, of objects or of arrays, are one problem line, not a stack overflow', () => {
    const objects = configFile(nestedObjects(100_000));
    assert.match(problemsOf({ file: objects })[0]!, new RegExp(`^${objects}:1:\\d+: ${DEPTH_REASON.replace(/[().]/g, '\\$&')}$`));
    const arrays = configFile(`{"ApiKeys": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    assert.equal(problemsOf({ file: arrays }).length, 1);
  });

  it('a section given twice is merged in time linear in its keys (a search per key made it their product)', () => {
    const half = (prefix: string): string => JSON.stringify(Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`${prefix}${i}`, 1])));
    const file = configFile(`{"Server": ${half('a')}, "server": ${half('b')}}`);
    const started = performance.now();
    const problems = problemsOf({ file });
    assert.ok(performance.now() - started < 3000, `${performance.now() - started} ms`);
    assert.equal(problems.at(-1), `... and ${40_000 - MAX_LISTED_PROBLEMS} more`);
  });

  it('a key of 5,000 parts from the environment is ignored, and quoted cut short; from a flag it names no key', () => {
    const name = ['Server', ...Array<string>(5000).fill('a')].join('__');
    const loaded = loadConfig({ env: { [name]: '1' } });
    assert.deepEqual(loaded.ignored, [`environment variable ${name.slice(0, 61)}... names no configuration key and is ignored`]);
    const flag = ['Server', ...Array<string>(5000).fill('a')].join('.');
    assert.deepEqual(problemsOf({ flags: { [flag]: '1' } }), [`${flag.slice(0, 61)}...: unknown key from flag --${flag.slice(0, 61)}...`]);
  });
});

describe('many problems', () => {
  const more = (total: number): string => `... and ${total - MAX_LISTED_PROBLEMS} more`;

  it(`lists the first ${MAX_LISTED_PROBLEMS} of 200,000 bad array items, then how many more`, () => {
    const file = configFile({ ApiKeys: Array<string>(200_000).fill('') });
    const problems = problemsOf({ file });
    assert.equal(problems.length, MAX_LISTED_PROBLEMS + 1);
    assert.equal(problems[0], `ApiKeys[0]: "" from file ${file} is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it`);
    assert.equal(problems[MAX_LISTED_PROBLEMS - 1], `ApiKeys[${MAX_LISTED_PROBLEMS - 1}]: "" from file ${file} is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it`);
    assert.equal(problems[MAX_LISTED_PROBLEMS], more(200_000));
  });

  it('words a spelling hint only for the unknown keys it lists: 30,000 take well under the 14 s they took', () => {
    const keys = Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`Prot${i}`, 1]));
    const file = configFile({ Server: { Prot: 1, ...keys } });
    const started = performance.now();
    const problems = problemsOf({ file });
    assert.ok(performance.now() - started < 3000, `${performance.now() - started} ms`);
    assert.equal(problems[0], `Server.Prot: unknown key from file ${file} (did you mean Server.Port?)`);
    assert.equal(problems.length, MAX_LISTED_PROBLEMS + 1);
    assert.equal(problems.at(-1), more(30_001));
  });

  it('counts problems from every source together: unknown keys by source, then values', () => {
    const file = configFile({ Server: { Prot: 1 } });
    const env = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`ApiKeys__${i}`, '']));
    const problems = problemsOf({ file, env, flags: { 'Sever.Port': 1 } });
    assert.deepEqual(problems.slice(0, 3), [
      `Server.Prot: unknown key from file ${file} (did you mean Server.Port?)`,
      'Sever.Port: unknown key from flag --Sever.Port (did you mean Server.Port?)',
      'ApiKeys[0]: "" from env ApiKeys__0 is invalid: must be a non-empty string of printable ASCII (spaces and tabs only inside it), as an HTTP header carries it',
    ]);
    assert.equal(problems.at(-1), more(32));
  });

  it('lists the first ignored environment variables, then how many more', () => {
    const env = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`Server__Prot${String(i).padStart(4, '0')}`, '1']));
    const { ignored } = loadConfig({ env });
    assert.equal(ignored?.length, MAX_LISTED_PROBLEMS + 1);
    assert.equal(ignored?.[0], 'environment variable Server__Prot0000 names no configuration key and is ignored');
    assert.equal(ignored?.at(-1), `${more(1000)} ignored environment variables`);
  });

  it('quotes a long value cut short, with its length', () => {
    const file = configFile({ Server: 'x'.repeat(10_000) });
    assert.deepEqual(problemsOf({ file }), [`Server: "${'x'.repeat(76)}... (10000 characters) from file ${file} is invalid: must be an object (a section of keys)`]);
  });
});

describe('spelling hints', () => {
  it('compare no candidate with a name too long or short to be near it', () => {
    const started = performance.now();
    for (let i = 0; i < 100; i++) assert.equal(closest('a'.repeat(100_000), ['Server.Port', 'Mqtt.Port']), undefined);
    assert.ok(performance.now() - started < 1000, `${performance.now() - started} ms`);
    assert.equal(closest('Server.Prot', ['Server.Port', 'Mqtt.Port']), 'Server.Port');
  });
});

describe('log categories', () => {
  // Half a million categories (a 9 MB file, under the file's 16 MiB cap) took 900 MB and 8 s to read.
  it('1,000 are read; a file with more is refused for that alone, before any is looked at', () => {
    const levels = (count: number): Record<string, string> => Object.fromEntries(Array.from({ length: count }, (_, i) => [`C${i}`, 'Debug']));
    const loaded = loadConfig({ file: configFile({ Logging: { LogLevel: levels(1000) } }) });
    assert.equal(loaded.config.Logging.LogLevel.C999, 'Debug');
    const file = configFile({ Logging: { LogLevel: { ...levels(200_000), Bad: 'Loud' } } });
    assert.deepEqual(problemsOf({ file }), [`Logging.LogLevel: from file ${file} has 200001 keys, more than the 1000 it may have`]);
  });
});
