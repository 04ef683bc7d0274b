// CORS in a real browser: headless Chromium loads a page from another loopback origin (another port) and
// calls the service with fetch, as a dashboard would. With that origin in Cors:AllowedOrigins the page
// registers a device, lists devices (admin token in Authorization, so preflighted, and with credentials as
// the SignalR client sends them) and reads /health; from an origin not in the list, Chromium refuses to
// hand the answers to the page. A folder of its own: a browser has no place in the fast tier of test/api.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startService, type TestService } from '../support/service.js';
import { adminToken } from '../support/tokens.js';

/** A server on 127.0.0.1:0 that serves one empty page: the origin the dashboard lives on. */
async function pageOrigin(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>dashboard</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

interface Outcome { ok: boolean; status?: number; body?: unknown; error?: string }

/** Runs one fetch in the page; a CORS refusal surfaces as a TypeError, never as an answer. */
async function fetchInPage(page: Page, url: string, init: { method?: string; headers?: Record<string, string>; body?: string; credentials?: 'include' }): Promise<Outcome> {
  return page.evaluate(async ({ url, init }) => {
    try {
      const res = await fetch(url, init);
      const text = await res.text();
      return { ok: true, status: res.status, body: text ? JSON.parse(text) : undefined };
    } catch (e) {
      return { ok: false, error: String(e) };
    }
  }, { url, init });
}

describe('CORS in Chromium', () => {
  let browser: Browser;
  let allowed: Awaited<ReturnType<typeof pageOrigin>>;
  let unlisted: Awaited<ReturnType<typeof pageOrigin>>;
  let svc: TestService;
  before(async () => {
    allowed = await pageOrigin();
    unlisted = await pageOrigin();
    svc = await startService({ env: { Cors__AllowedOrigins__0: allowed.origin } });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      timeout: 60_000,
    });
  });
  after(async () => {
    await browser?.close();
    await allowed?.close();
    await unlisted?.close();
  });

  const register = (deviceId: string) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId, deviceName: 'Kitchen satellite', deviceType: 'speaker' }),
  });

  test('a page on a listed origin registers a device, lists devices and reads /health', { timeout: 120_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(allowed.origin);
    const registered = await fetchInPage(page, `${svc.url}/api/device/register`, register('kitchen-satellite'));
    assert.equal(registered.ok, true, registered.error);
    assert.equal(registered.status, 200);
    assert.equal((registered.body as { deviceInfo: { id: string } }).deviceInfo.id, 'kitchen-satellite');

    const listed = await fetchInPage(page, `${svc.url}/api/device/list`, { headers: { authorization: `Bearer ${await adminToken(svc)}` }, credentials: 'include' });
    assert.equal(listed.ok, true, listed.error);
    assert.equal(listed.status, 200);
    assert.deepEqual((listed.body as { devices: Array<{ id: string }> }).devices.map((d) => d.id), ['kitchen-satellite']);

    const health = await fetchInPage(page, `${svc.url}/health`, {});
    assert.equal(health.ok, true, health.error);
    assert.ok([200, 503].includes(health.status!), String(health.status));
    assert.match(String((health.body as { status: string }).status), /^(Healthy|Degraded|Unhealthy)$/);
    await page.close();
  });

  test('a page on an origin not in the list is refused by the browser', { timeout: 120_000 }, async () => {
    const page = await browser.newPage();
    await page.goto(unlisted.origin);
    const registered = await fetchInPage(page, `${svc.url}/api/device/register`, register('hall-satellite'));
    assert.equal(registered.ok, false);
    assert.match(registered.error!, /TypeError: Failed to fetch/);
    const listed = await fetchInPage(page, `${svc.url}/api/device/list`, { headers: { authorization: `Bearer ${await adminToken(svc)}` } });
    assert.equal(listed.ok, false);
    const health = await fetchInPage(page, `${svc.url}/health`, {});
    assert.equal(health.ok, false, 'even a simple GET is withheld from the page');
    await page.close();
  });
});
