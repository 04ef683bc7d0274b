// Swagger UI at /swagger: the page, its files from swagger-ui-dist (allow-list only), and the UI itself
// in headless Debian Chromium, whose "Try it out" on /health must reach the service and nothing else.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { acceptsGzip, loadSwaggerAsset, PAGE_POLICY, SWAGGER_ASSETS } from '../../src/api/routes/swagger.js';
import { call } from '../support/http.js';
import { startService, type TestService } from '../support/service.js';
import { tmpDir } from '../support/tmp.js';

const DIST = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const identity = { 'accept-encoding': 'identity' };

/** A GET with the path sent exactly as written (fetch would normalise `..` away). */
function rawGet(port: number, rawPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: rawPath, timeout: 10_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

let service: TestService;
before(async () => {
  service = await startService();
});

describe('Swagger UI files', () => {
  test('the page is served at /swagger, /swagger/ and /swagger/index.html', async () => {
    for (const p of ['/swagger', '/swagger/', '/swagger/index.html']) {
      const res = await call(service.url, 'GET', p, { headers: identity });
      assert.equal(res.status, 200, p);
      assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      assert.equal(res.headers.get('content-security-policy'), PAGE_POLICY, p);
      assert.equal(res.headers.get('x-frame-options'), 'DENY', p);
      for (const file of ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-initializer.js']) {
        assert.ok(res.text.includes(`"/swagger/${file}"`), `${p} links ${file}`);
      }
      assert.doesNotMatch(res.text, /https?:\/\//, 'no link leaves the service');
    }
    const page = await call(service.url, 'GET', '/swagger', { headers: identity });
    const revalidated = await call(service.url, 'GET', '/swagger', { headers: { ...identity, 'if-none-match': page.headers.get('etag')! } });
    assert.equal(revalidated.status, 304);
    assert.equal(revalidated.headers.get('content-security-policy'), PAGE_POLICY, 'a 304 keeps the policy (RFC 9110 section 15.4.5)');
    assert.equal(revalidated.headers.get('x-frame-options'), 'DENY');
    assert.equal(PAGE_POLICY,
      "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='; img-src 'self' data: blob:; " +
      "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    const init = await call(service.url, 'GET', '/swagger/swagger-initializer.js', { headers: identity });
    assert.equal(init.status, 200);
    assert.equal(init.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.match(init.text, /url: "\/swagger\/v1\/swagger\.json"/);
    assert.match(init.text, /validatorUrl: null/);
  });

  test('every asset is the swagger-ui-dist file, with its type and caching', async () => {
    const types: Record<string, RegExp> = { '.css': /^text\/css/, '.js': /^text\/javascript/, '.png': /^image\/png$/, '.txt': /^text\/plain/, '': /^text\/plain/ };
    for (const name of SWAGGER_ASSETS) {
      const res = await fetch(`${service.url}/swagger/${name}`, { headers: identity, signal: AbortSignal.timeout(15_000) });
      assert.equal(res.status, 200, name);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(readFileSync(path.join(DIST, name))), `${name} bytes`);
      assert.match(res.headers.get('content-type') ?? '', types[path.extname(name)]!, name);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=86400', name);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
    for (const needed of ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png']) {
      assert.ok(SWAGGER_ASSETS.includes(needed), needed);
    }
  });

  test('gzip when accepted, and 304 for a matching ETag', async () => {
    const url = `${service.url}/swagger/swagger-ui-bundle.js`;
    const raw = readFileSync(path.join(DIST, 'swagger-ui-bundle.js'));
    const zipped = await new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http.get(url, { headers: { 'accept-encoding': 'gzip, deflate' }, timeout: 15_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      }).on('error', reject);
    });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(zipped.headers.vary, 'Accept-Encoding');
    assert.ok(zipped.body.length < raw.length / 2);
    assert.ok(gunzipSync(zipped.body).equals(raw));

    const plain = await fetch(url, { headers: identity, signal: AbortSignal.timeout(15_000) });
    await plain.arrayBuffer();
    assert.equal(plain.headers.get('content-encoding'), null);
    assert.notEqual(plain.headers.get('etag'), zipped.headers.etag, 'two representations, two ETags');
    const again = await fetch(url, { headers: { ...identity, 'if-none-match': plain.headers.get('etag')! }, signal: AbortSignal.timeout(15_000) });
    assert.equal(again.status, 304);
    assert.equal((await again.arrayBuffer()).byteLength, 0);

    assert.equal(acceptsGzip('gzip;q=0, deflate'), false);
    assert.equal(acceptsGzip('br, *'), true);
    assert.equal(acceptsGzip(undefined), false);
    // gzip named wins over `*`, in either order.
    assert.equal(acceptsGzip('*;q=0, gzip'), true);
    assert.equal(acceptsGzip('*, gzip;q=0'), false);
    assert.equal(acceptsGzip('*;q=0'), false);
  });

  test('only the allow-list: no other file, no way out of the folder', async () => {
    for (const p of ['/swagger/package.json', '/swagger/swagger-ui.js.map', '/swagger/README.md', '/swagger/..%2Fpackage.json', '/swagger/..%2F..%2Fpackage.json', '/swagger/%2e%2e%2fLICENSE']) {
      const res = await call(service.url, 'GET', p);
      assert.equal(res.status, 404, p);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, p);
    }
    // Dot segments are removed before routing, as Kestrel removes them: what is left is a path of its own.
    for (const p of ['/swagger/../package.json', '/swagger/../../../etc/passwd', '/swagger/./LICENSE/../x']) {
      assert.equal(await rawGet(service.port, p), 404, p);
    }
    assert.equal(await rawGet(service.port, '/swagger/./LICENSE/..'), 200, 'the UI page at /swagger/');
    assert.equal((await call(service.url, 'POST', '/swagger/swagger-ui.css')).status, 405);
  });

  test('loadSwaggerAsset: from the build beside the bundle, and nothing else there', () => {
    const bundleDir = tmpDir();
    mkdirSync(path.join(bundleDir, 'swagger'));
    writeFileSync(path.join(bundleDir, 'swagger', 'index.css'), 'body{}');
    assert.equal(loadSwaggerAsset('index.css', bundleDir).toString(), 'body{}');
    // A build without the file must fail loudly, not fall back to a node_modules that a Pi does not have.
    assert.throws(() => loadSwaggerAsset('swagger-ui.css', bundleDir), /missing from this build/);
    assert.throws(() => loadSwaggerAsset('../package.json'), /not a Swagger UI asset/);
    assert.ok(loadSwaggerAsset('swagger-ui.css').equals(readFileSync(path.join(DIST, 'swagger-ui.css'))));
  });
});

describe('Swagger UI in Chromium', () => {
  let browser: Browser | undefined;
  after(async () => {
    await browser?.close();
  });

  test('lists the operations, and Try it out on /health gets the service\'s answer', { timeout: 180_000 }, async (t) => {
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      timeout: 60_000,
    });
    const page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // Whatever the policy blocks would break a part of the UI: every violation is reported to the test.
    const violations: string[] = [];
    await page.exposeFunction('reportViolation', (v: string) => violations.push(v));
    await page.addInitScript({
      content: "document.addEventListener('securitypolicyviolation', (e) => reportViolation(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));",
    });

    const response = await page.goto(`${service.url}/swagger`);
    assert.equal(response?.status(), 200);
    // Swagger UI gives each operation the id operations-<tag>-<operationId>.
    await page.locator('#operations-Devices-registerDevice').waitFor();
    for (const id of ['Devices-updateDeviceStatus', 'Devices-listDevices', 'Voice-startVoiceSession', 'Configuration-putConfigCategory', 'Health-health']) {
      assert.equal(await page.locator(`#operations-${id}`).count(), 1, id);
    }
    assert.equal(await page.locator('#operations-Health-health .opblock-summary-path').innerText(), '/health');
    assert.equal(await page.locator('[id^="operations-Documentation-"]').count(), 0, 'the documentation routes are not listed');

    const health = page.locator('#operations-Health-health');
    await health.locator('.opblock-summary-control').click();
    await health.getByRole('button', { name: 'Try it out' }).click();
    await health.getByRole('button', { name: 'Execute' }).click();
    const shown = (await health.locator('.live-responses-table tbody tr.response .response-col_status').first().innerText()).trim();
    // No upstream in the test service: Unhealthy, 503. Whatever it is, the UI must show what the service says.
    const direct = await call(service.url, 'GET', '/health');
    assert.ok([200, 503].includes(direct.status));
    assert.equal(shown, String(direct.status));

    const shot = path.join(tmpDir(), 'swagger.png');
    await health.locator('.live-responses-table').scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot, fullPage: false });
    assert.ok(readFileSync(shot).subarray(1, 4).toString() === 'PNG', 'a screenshot was taken');
    t.diagnostic(`screenshot: ${shot}`);

    // Try it out on an operation with a body, and the Authorize dialog: more of the UI under the policy.
    const register = page.locator('#operations-Devices-registerDevice');
    await register.locator('.opblock-summary-control').click();
    await register.getByRole('button', { name: 'Try it out' }).click();
    await register.getByRole('button', { name: 'Execute' }).click();
    assert.equal((await register.locator('.live-responses-table tbody tr.response .response-col_status').first().innerText()).trim(), '200');
    await page.locator('.btn.authorize').first().click();
    await page.locator('.modal-ux').waitFor();
    await page.keyboard.press('Escape');

    assert.deepEqual(pageErrors, []);
    assert.deepEqual(violations, [], 'the UI does nothing its Content-Security-Policy forbids');
    const foreign = requests.filter((u) => !u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).hostname !== '127.0.0.1');
    assert.deepEqual(foreign, [], 'the page asked hosts other than the service');
    assert.ok(requests.some((u) => u.endsWith('/swagger/v1/swagger.json')));
    assert.ok(requests.some((u) => u.endsWith('/health')));
  });

  test('a page on another origin cannot frame the UI, and the UI runs no inline script', { timeout: 180_000 }, async () => {
    browser ??= await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      timeout: 60_000,
    });
    // The hostile page: another loopback origin that frames /swagger (clickjacking: its own content laid
    // over the UI's buttons, which a technician clicks with a token given to Authorize).
    const hostile = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><iframe id="ui" src="${service.url}/swagger" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(30_000);
      const frameAnswer = page.waitForResponse((r) => r.url() === `${service.url}/swagger`);
      await page.goto(`http://127.0.0.1:${(hostile.address() as AddressInfo).port}/`);
      assert.equal((await frameAnswer).status(), 200);
      await page.waitForTimeout(1000);
      const frame = page.frames().find((f) => f !== page.mainFrame());
      assert.ok(frame, 'the iframe is there');
      assert.equal(await frame.locator('#swagger-ui').count(), 0, 'the UI is not shown in another origin\'s frame');
      assert.equal(frame.url(), 'chrome-error://chromewebdata/', 'Chromium shows its error page in the frame');

      // Opened directly, the UI works; script that is not one of its files (what an injection would add) does not run.
      const ui = await browser.newPage();
      await ui.goto(`${service.url}/swagger`);
      await ui.locator('#operations-Health-health').waitFor();
      const ran = await ui.evaluate<boolean>(`new Promise((resolve) => {
        window.injected = false;
        const script = document.createElement('script');
        script.textContent = 'window.injected = true';
        document.body.appendChild(script);
        setTimeout(() => resolve(window.injected === true), 100);
      })`);
      assert.equal(ran, false, 'an inline script is refused by the page\'s policy');
      await page.close();
      await ui.close();
    } finally {
      hostile.closeAllConnections();
      await new Promise<void>((resolve) => hostile.close(() => resolve()));
    }
  });
});
