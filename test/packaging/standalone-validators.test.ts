// The service runs the validators as standalone code generated at build time; tests run them as ajv
// compiles them. Both forms must accept and refuse the same values with the same errors (the problem
// lines and the API's field messages are made from them), for every configuration key and every
// request-body field, with values of every wrong kind. And the bundle must carry the generated code,
// not ajv and its compiler.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';
import { build } from 'esbuild';
import type { ValidateFunction } from 'ajv';
import { CONFIG_SCHEMA, type SchemaNode } from '../../src/config/schema.js';
import { leafKeys } from '../../src/config/schema-keys.js';
import { configValidator } from '../../src/config/validator.js';
import { REQUEST_SCHEMAS } from '../../src/http/request-schemas.js';
import { requestValidator } from '../../src/http/validator.js';
import { standaloneConfigValidator, standaloneRequestValidators } from '../../scripts/standalone-validators.js';
import { PROGRAM, ROOT } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

interface Validators {
  configValidator(): ValidateFunction;
  requestValidator(name: string): ValidateFunction | undefined;
}

/** The generated modules, bundled as build.mjs bundles them. */
async function loadStandalone(): Promise<Validators> {
  const vocabulary = path.join(ROOT, 'src/config/vocabulary.ts');
  const load = async <T>(code: string, dir: string): Promise<T> => {
    const file = path.join(tmpDir('voice-hub-validators-'), 'validator.cjs');
    await build({ stdin: { contents: code, resolveDir: path.join(ROOT, dir), loader: 'js' }, outfile: file, bundle: true, platform: 'node', format: 'cjs', logLevel: 'error' });
    return createRequire(import.meta.url)(file) as T;
  };
  return {
    ...(await load<Pick<Validators, 'configValidator'>>(standaloneConfigValidator(vocabulary), 'src/config')),
    ...(await load<Pick<Validators, 'requestValidator'>>(standaloneRequestValidators(vocabulary), 'src/http')),
  };
}

/** Values of every kind, including text that counts differently in UTF-16 units and in characters. */
const WRONG: unknown[] = [
  null, true, 0, -1, 1.5, 1e12, '', 'x', 'not valid', '00:00:00', '99999.00:00:00', '-00:00:01', 'http://host/',
  'ws://host:5000/voice', 'https://a.example', '\u{1F600}'.repeat(128), 'y'.repeat(300), 'z'.repeat(5000), [], ['x'], [1], {}, { a: 1 },
];

function defaults(node: SchemaNode = CONFIG_SCHEMA): Record<string, unknown> {
  const tree: Record<string, unknown> = {};
  for (const { path: keyPath, node: leaf } of leafKeys(node)) {
    if (leaf.default === undefined) continue;
    let obj = tree;
    for (const seg of keyPath.slice(0, -1)) obj = (obj[seg] ??= {}) as Record<string, unknown>;
    obj[keyPath[keyPath.length - 1]!] = structuredClone(leaf.default);
  }
  return tree;
}

function withValue(tree: Record<string, unknown>, keyPath: readonly string[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(tree);
  let obj = copy;
  for (const seg of keyPath.slice(0, -1)) obj = (obj[seg] ??= {}) as Record<string, unknown>;
  obj[keyPath[keyPath.length - 1]!] = value;
  return copy;
}

/** Every property path of a request schema, nested objects included. */
function propertyPaths(schema: Record<string, unknown>, prefix: string[] = []): string[][] {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(props).flatMap(([name, child]) => [[...prefix, name], ...propertyPaths(child, [...prefix, name])]);
}

function same(compiled: ValidateFunction, standalone: ValidateFunction, data: unknown, what: string): void {
  const valid = compiled(data);
  assert.equal(standalone(data), valid, `${what}: valid`);
  assert.deepEqual(standalone.errors ?? null, compiled.errors ?? null, `${what}: errors`);
}

describe('standalone validators (as the bundle runs them)', async () => {
  const standalone = await loadStandalone();

  it('the configuration: defaults, and every key given every kind of wrong value, with the same errors', () => {
    const compiled = configValidator();
    const generated = standalone.configValidator();
    const tree = defaults();
    same(compiled, generated, tree, 'defaults');
    assert.equal(generated(tree), true, 'the defaults are valid');
    same(compiled, generated, { ...tree, NoSuchSection: {} }, 'unknown section');
    let refused = 0;
    for (const { path: keyPath } of leafKeys()) {
      for (const value of WRONG) {
        const data = withValue(tree, keyPath, value);
        same(compiled, generated, data, `${keyPath.join('.')} = ${JSON.stringify(value)?.slice(0, 40)}`);
        if (!compiled(data)) refused++;
      }
    }
    assert.ok(refused > leafKeys().length * 5, `most wrong values are refused (${refused})`);
  });

  it('the time span keyword and the formats give their own errors in both forms', () => {
    const tree = defaults();
    const spans = leafKeys().filter((k) => k.node['x-timespan']);
    const formats = leafKeys().filter((k) => k.node.format ?? k.node.items?.format);
    assert.ok(spans.length > 0 && formats.length > 0);
    const span = spans[0]!;
    const generated = standalone.configValidator();
    assert.equal(generated(withValue(tree, span.path, '99999.00:00:00')), false);
    const bounds = span.node['x-timespan']!;
    assert.deepEqual(generated.errors!.map((e) => [e.keyword, e.message, e.params]), [
      ['x-timespan', `must be a time span from ${bounds.minimum} to ${bounds.maximum}`, { minimum: bounds.minimum, maximum: bounds.maximum }],
    ]);
    const url = formats.find((k) => k.node.format === 'ws-url')!;
    assert.equal(generated(withValue(tree, url.path, 'http://host/')), false);
    assert.deepEqual(generated.errors!.map((e) => [e.instancePath, e.keyword, e.message]), [[`/${url.path.join('/')}`, 'format', 'must match format "ws-url"']]);
  });

  it('every request body: every field given every kind of wrong value, with the same errors', () => {
    for (const [name, schema] of Object.entries(REQUEST_SCHEMAS)) {
      const compiled = requestValidator(name)!;
      const generated = standalone.requestValidator(name);
      assert.ok(generated, `${name} is generated`);
      for (const body of [undefined, null, [], {}, 'text', { unknownField: 1 }]) same(compiled, generated, body, `${name} ${JSON.stringify(body)}`);
      for (const fieldPath of propertyPaths(schema)) {
        for (const value of WRONG) same(compiled, generated, withValue({}, fieldPath, value), `${name}.${fieldPath.join('.')} = ${JSON.stringify(value)?.slice(0, 40)}`);
      }
    }
    assert.equal(standalone.requestValidator('NoSuchSchema'), undefined);
    assert.equal(standalone.requestValidator('__proto__'), undefined);
    assert.equal(requestValidator('__proto__'), undefined);
  });

  it('the bundle carries the generated validators, not ajv', () => {
    assert.ok(existsSync(`${PROGRAM}.map`), `${PROGRAM}.map is missing: run node build.mjs`);
    const sources = (JSON.parse(readFileSync(`${PROGRAM}.map`, 'utf8')) as { sources: string[] }).sources;
    const ajvFiles = sources.filter((s) => s.includes('node_modules/ajv/'));
    // ajv's small run-time helpers (string length in characters, deep equality) are what the generated code calls.
    assert.deepEqual(ajvFiles.filter((s) => !/node_modules\/ajv\/(dist|lib)\/runtime\//.test(s)), []);
    assert.deepEqual(sources.filter((s) => /src\/(config\/ajv|config\/validator|http\/validator)\.ts$/.test(s)), [], 'the ajv compilation is not bundled');
    assert.match(readFileSync(PROGRAM, 'utf8'), /must be a time span from /);
  });
});
