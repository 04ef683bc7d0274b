// The request schemas of the served document take what the running service takes and refuse what it
// refuses: each operation's example body, changed one property at a time (null, each JSON type, the
// edges of lengths, ranges, enums and item counts, a nested property), is sent to the service, and a
// 400 must come exactly for the bodies the document's schema calls invalid. A client that validates
// (or generates its types) from the document then neither sends what is refused nor withholds what is
// taken, such as the null that protocol.md says an optional property may be.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Ajv, ValidateFunction } from 'ajv';
import { call } from '../support/http.js';
import type { TestService } from '../support/service.js';
import { servedDocument } from './served-document.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Doc = any;

/**
 * What the document cannot say of a value: a time span's range (minutes up to 59, its bounds), which its
 * description says in words. Its form is a pattern; such a property is tried with values of a valid form
 * within the range and with values of another form.
 */
const rangeInWords = (schema: Doc): boolean => schema['x-timespan'] !== undefined;

/** The values each property is tried with, by what its schema says. */
function variants(schema: Doc): Array<[string, unknown]> {
  if (rangeInWords(schema)) {
    return [
      ['null', null], ['minimum', schema['x-timespan'].minimum], ['maximum', schema['x-timespan'].maximum],
      ['text', 'x'], ['empty text', ''], ['in words', '1 day'], ['without seconds', '00:30'], ['integer', 7], ['true', true],
    ];
  }
  const out: Array<[string, unknown]> = [
    ['null', null], ['zero', 0], ['integer', 7], ['fraction', 1.5], ['negative', -1], ['large', 1e9],
    ['text', 'x'], ['empty text', ''], ['true', true], ['empty array', []], ['empty object', {}],
  ];
  if (schema.maxLength !== undefined) out.push(['maxLength', 'a'.repeat(schema.maxLength)], ['maxLength + 1', 'a'.repeat(schema.maxLength + 1)]);
  if (schema.minimum !== undefined) out.push(['minimum', schema.minimum], ['under minimum', schema.minimum - 0.5]);
  if (schema.maximum !== undefined) out.push(['maximum', schema.maximum], ['over maximum', schema.maximum + 0.5]);
  for (const value of schema.enum ?? []) out.push([`enum ${JSON.stringify(value)}`, value]);
  if (schema.maxItems !== undefined) out.push(['maxItems', Array(schema.maxItems).fill('a')], ['maxItems + 1', Array(schema.maxItems + 1).fill('a')]);
  if (schema.items?.maxLength !== undefined) out.push(['item at maxLength + 1', ['a'.repeat(schema.items.maxLength + 1)]], ['empty item', ['']]);
  if (schema.items?.pattern !== undefined) out.push(['item with a space at its end', ['a ']], ['item of a space alone', [' ']]);
  if (schema.uniqueItems) out.push(['an item twice', ['a', 'b', 'a']]);
  return out;
}

describe('request schemas of the document and the service agree', () => {
  let svc: TestService;
  let doc: Doc;
  let ajv: Ajv;
  let admin: string;
  before(async () => {
    // Formats are names for readers here.
    ({ svc, doc, ajv, admin } = await servedDocument({ validateFormats: false }));
  });

  /** Sends every variant of `example` to `method path`; the disagreements, one line each. */
  async function disagreements(method: string, path: string, schemaName: string, variantsOf: string, example: Record<string, unknown>): Promise<string[]> {
    const validate: ValidateFunction = ajv.compile({ $ref: `doc#/components/schemas/${schemaName}` });
    const schema = doc.components.schemas[variantsOf];
    const bodies: Array<[string, unknown]> = [['the example', example], ['an unknown property', { ...example, unknownProperty: 1 }]];
    for (const [name, property] of Object.entries<Doc>(schema.properties ?? {})) {
      for (const [label, value] of variants(property)) bodies.push([`${name} ${label}`, { ...example, [name]: value }]);
      for (const [inner, innerSchema] of Object.entries<Doc>(property.properties ?? {})) {
        for (const [label, value] of variants(innerSchema)) bodies.push([`${name}.${inner} ${label}`, { ...example, [name]: { [inner]: value } }]);
      }
    }
    const out: string[] = [];
    for (const [label, body] of bodies) {
      const documented = validate(structuredClone(body));
      const res = await call(svc.url, method, path, { body, token: admin });
      if (documented === (res.status === 400)) {
        out.push(`${schemaName} ${label}: the document says ${documented ? 'valid' : `invalid (${ajv.errorsText(validate.errors)})`}, the service answers ${res.status} ${res.text.slice(0, 200)}`);
      }
    }
    return out;
  }

  /**
   * Each operation with a body: the schema its request body names, the schema whose properties are varied
   * (the same but for the category update, whose body is one category's settings) and the document's example.
   */
  function operations(): Array<[string, string, string, string, Record<string, unknown>]> {
    const out: Array<[string, string, string, string, Record<string, unknown>]> = [];
    for (const [template, item] of Object.entries<Doc>(doc.paths)) {
      for (const [method, op] of Object.entries<Doc>(item)) {
        const media = op.requestBody?.content['application/json'];
        if (!media) continue;
        const name = String(media.schema.$ref).split('/').pop()!;
        if (media.example) out.push([method.toUpperCase(), template.replace('{deviceId}', 'kitchen-satellite'), name, name, media.example]);
        for (const [category, { value }] of Object.entries<Doc>(media.examples ?? {})) {
          const settings = `${category[0]!.toUpperCase()}${category.slice(1)}Settings`;
          assert.ok(doc.components.schemas[settings], settings);
          out.push([method.toUpperCase(), template.replace('{category}', category), name, settings, value]);
        }
      }
    }
    // Registration last: the device it registers would make the voice operations start real sessions.
    return out.sort(([, a], [, b]) => Number(a === '/api/device/register') - Number(b === '/api/device/register'));
  }

  test('every body the document calls valid is taken, every other one is 400', async () => {
    const ops = operations();
    assert.deepEqual(ops.map(([method, path]) => `${method} ${path}`).sort(), [
      'POST /api/device/register', 'POST /api/voice/message', 'POST /api/voice/start', 'POST /api/voice/stop',
      'PUT /api/config/device', 'PUT /api/config/mqtt', 'PUT /api/config/voice', 'PUT /api/device/kitchen-satellite/status',
    ]);
    const found: string[] = [];
    for (const [method, path, name, variantsOf, example] of ops) found.push(...(await disagreements(method, path, name, variantsOf, example)));
    assert.deepEqual(found, []);
  });

  test('a body may have each media type the document names for it, and no other', async () => {
    // ASP.NET Core's three (Swashbuckle lists them for every body), and a +json type under text/, which
    // MVC takes as a subtype of text/json.
    const ranges = ['application/json', 'text/json', 'application/*+json', 'text/*+json'];
    for (const [label, item] of Object.entries<Doc>(doc.paths)) {
      for (const [method, op] of Object.entries<Doc>(item)) {
        if (!op.requestBody) continue;
        assert.deepEqual(Object.keys(op.requestBody.content), ranges, `${method} ${label}`);
        for (const range of ranges) assert.ok(op.responses['415'].description.includes(range), `${method} ${label}: 415 does not name ${range}`);
      }
    }
    const media = doc.paths['/api/device/register'].post.requestBody.content;
    for (const [i, range] of ranges.entries()) {
      assert.deepEqual(media[range].schema, { $ref: '#/components/schemas/RegisterDeviceRequest' });
      const type = range.replace('*', 'vnd.example');
      const body = { deviceId: `media-${i}`, deviceName: 'n', deviceType: 't' };
      const res = await call(svc.url, 'POST', '/api/device/register', { raw: JSON.stringify(body), headers: { 'content-type': type } });
      assert.equal(res.status, 200, `${type}: ${res.text}`);
    }
    for (const type of ['application/xml', 'text/plain', 'application/json-seq', 'text/vnd.example+xml']) {
      const res = await call(svc.url, 'POST', '/api/device/register', { raw: '{}', headers: { 'content-type': type } });
      assert.equal(res.status, 415, type);
    }
  });

  test('an optional property is documented as taking null, a required one is not', () => {
    const register = doc.components.schemas.RegisterDeviceRequest.properties;
    assert.deepEqual(register.location, {
      type: 'string', nullable: true, maxLength: 256, default: '',
      pattern: '^[^\\u0000]*$', 'x-expected': 'must not hold U+0000 (NUL), which the database cannot keep',
    });
    assert.equal(register.deviceId.nullable, undefined);
    const config = doc.components.schemas.StartSessionRequest.properties.sessionConfig;
    assert.equal(config.nullable, true);
    // An enum names the null it takes, or a validator reading the enum alone refuses it.
    assert.deepEqual(config.properties.audioFormat, { type: 'string', nullable: true, enum: ['opus', null] });
  });
});
