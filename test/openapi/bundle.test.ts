// The built bundle serves Swagger UI from the files build.mjs put in dist/swagger/, not from
// node_modules (which a Pi does not have): with a bundleDir there is no fallback to swagger-ui-dist.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { SWAGGER_ASSETS } from '../../src/api/routes/swagger.js';
import { call } from '../support/http.js';
import { spawnService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const DIST = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

test('the bundle serves the document and every Swagger UI file from its build', { timeout: 60_000 }, async () => {
  const svc = await spawnService(['--data-dir', tmpDir()]);
  const page = await call(svc.url, 'GET', '/swagger');
  assert.equal(page.status, 200);
  assert.match(page.text, /swagger-ui-bundle\.js/);
  const doc = await call(svc.url, 'GET', '/swagger/v1/swagger.json');
  assert.equal(doc.status, 200);
  assert.equal(doc.json.openapi, '3.0.3');
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
  assert.equal(doc.json.info.version, pkg.version, 'the bundle knows its version');
  for (const name of SWAGGER_ASSETS) {
    const res = await fetch(`${svc.url}/swagger/${name}`, { headers: { 'accept-encoding': 'identity' }, signal: AbortSignal.timeout(15_000) });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `${name}: ${body.toString().slice(0, 200)}`);
    assert.ok(body.equals(readFileSync(path.join(DIST, name))), name);
  }
  svc.proc.kill('SIGTERM');
  assert.equal(await svc.exited, 0);
});
