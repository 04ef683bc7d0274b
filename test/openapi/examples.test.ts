// Every request body and path parameter in the served API document has an example, each valid against
// the schema the document gives it and accepted by the service's own request validation, so Swagger
// UI's "Try it out" sends something sensible. The device examples are also sent to the running service.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import { validateBody } from '../../src/http/schemas.js';
import { CATEGORY_BODY } from '../../src/settings/schemas.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Doc = any;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

describe('examples in the API document', () => {
  let service: TestService;
  let doc: Doc;
  let ajv: Ajv;
  before(async () => {
    service = await startService();
    doc = (await call(service.url, 'GET', '/swagger/v1/swagger.json')).json;
    // The document's own schemas (OpenAPI 3.0: ajv reads `nullable`); formats are names for readers here.
    ajv = new Ajv({ strict: false, validateFormats: false });
    ajv.addSchema({ components: doc.components }, 'doc');
  });

  /** The operations of the document as [label, operation]. */
  const operations = (): Array<[string, Doc]> =>
    Object.entries(doc.paths).flatMap(([path, item]: [string, Doc]) =>
      METHODS.filter((m) => item[m]).map((m) => [`${m.toUpperCase()} ${path}`, item[m]] as [string, Doc]),
    );

  const assertValid = (schema: Doc, value: unknown, where: string): void => {
    const validate = ajv.compile(schema.$ref ? { $ref: `doc${schema.$ref}` } : schema);
    assert.equal(validate(value), true, `${where}: ${JSON.stringify(value)} is not valid: ${ajv.errorsText(validate.errors)}`);
  };

  test('every path parameter has an example valid against its schema', () => {
    let count = 0;
    for (const [label, op] of operations()) {
      for (const parameter of op.parameters ?? []) {
        assert.ok(parameter.example !== undefined, `${label} parameter ${parameter.name} has no example`);
        assertValid(parameter.schema, parameter.example, `${label} parameter ${parameter.name}`);
        count++;
      }
    }
    assert.ok(count >= 5, `only ${count} parameters`);
  });

  test('every request body media type has an example valid against its schema and the service\'s validation', () => {
    let count = 0;
    for (const [label, op] of operations()) {
      if (!op.requestBody) continue;
      for (const [type, media] of Object.entries(op.requestBody.content) as Array<[string, Doc]>) {
        const where = `${label} ${type}`;
        const named: Array<[string, unknown]> = media.examples ? Object.entries(media.examples).map(([k, v]: [string, Doc]) => [k, v.value]) : [];
        const values = media.example !== undefined ? [['example', media.example] as [string, unknown]] : named;
        assert.ok(values.length > 0, `${where} has no example`);
        const schemaName = String(media.schema.$ref).split('/').pop()!;
        for (const [name, value] of values) {
          assertValid(media.schema, value, `${where} (${name})`);
          // The category update's examples are named by category, each checked by that category's schema.
          const served = schemaName === 'ConfigCategoryUpdate' ? CATEGORY_BODY[name] : schemaName;
          assert.ok(served, `${where}: example ${name} names no category`);
          assert.doesNotThrow(() => validateBody(served, value), `${where} (${name}) is refused by the service`);
          count++;
        }
      }
    }
    assert.ok(count >= 8, `only ${count} request body examples`);
  });

  test('the device examples work against the running service, as Try it out would send them', async () => {
    const body = (path: string, method: string): unknown => doc.paths[path][method].requestBody.content['application/json'].example;
    const deviceId = doc.paths['/api/device/{deviceId}/status'].put.parameters[0].example;
    const registered = await call(service.url, 'POST', '/api/device/register', { body: body('/api/device/register', 'post') });
    assert.equal(registered.status, 200, registered.text);
    assert.equal(registered.json.deviceInfo.id, deviceId, 'the path example names the device the body example registers');
    const status = await call(service.url, 'PUT', `/api/device/${deviceId}/status`, { body: body('/api/device/{deviceId}/status', 'put'), token: registered.json.deviceToken });
    assert.equal(status.status, 200, status.text);
    const admin = await adminToken(service);
    for (const [category, example] of Object.entries(doc.paths['/api/config/{category}'].put.requestBody.content['application/json'].examples) as Array<[string, Doc]>) {
      const put = await call(service.url, 'PUT', `/api/config/${category}`, { body: example.value, token: admin });
      assert.equal(put.status, 200, `${category}: ${put.text}`);
    }
  });
});
