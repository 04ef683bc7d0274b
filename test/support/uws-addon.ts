// Which uWebSockets.js addon the tests run on, and what it does to request heads before the service sees
// them. voice-hub ships two: uWS v20.30 under Node 20 (the legacy builds) and v20.56 under Node 24. The
// older one answers no head it refuses (it closes at once or holds the connection); the newer one answers
// most itself and takes no head over 4,096 bytes. test/api/uws-refusals.test.ts holds the table of both;
// the hardening suites run under both Node versions and expect what the addon under them does.
import assert from 'node:assert/strict';
import type { Exchange } from './raw-http.js';

/** The addon in use, by Node's module ABI (src/runtime/asset-manifest.mjs lists them). */
export const UWS_ADDON: 'v20.30' | 'v20.56' | undefined =
  process.versions.modules === '115' ? 'v20.30' : process.versions.modules === '137' ? 'v20.56' : undefined;

/**
 * The largest request head (request line, fields and the blank line) the addon takes: v20.56's
 * UWS_HTTP_MAX_HEADERS_SIZE default, kept on purpose (docs/security.md). v20.30 parses a head of any size
 * that comes in one read, so the service's own limits (8 KiB of target, 32 KiB of fields) are what apply.
 */
export const UWS_MAX_HEAD_BYTES = UWS_ADDON === 'v20.56' ? 4096 : Infinity;

/**
 * An answer uWS writes itself: its status line, `Connection: close`, no Content-Length, and an HTML page
 * that ends with its signature (the service never answers HTML).
 */
const UWS_PAGE = /HTTP\/1\.1 (\d{3}) [^\r\n]*\r\nConnection: close\r\n\r\n<h1>[^<]*<\/h1>(?:<p>[^<]*<\/p>)?<hr><i>uWebSockets\/20 Server<\/i>/g;

/** The status of `text` when it is one answer uWS wrote itself and nothing else; otherwise undefined. */
export function uwsOwnStatus(text: string): number | undefined {
  const m = [...text.matchAll(UWS_PAGE)];
  return m.length === 1 && m[0]![0] === text ? Number(m[0]![1]) : undefined;
}

/** `text` less the answers with `status` uWS wrote itself. */
export const withoutUwsAnswers = (text: string, status: number): string =>
  text.replace(UWS_PAGE, (page, code: string) => (Number(code) === status ? '' : page));

/** Whether the request's head is longer than the addon takes (see UWS_MAX_HEAD_BYTES). */
export function overHeadLimit(request: Uint8Array): boolean {
  const end = Buffer.from(request.buffer, request.byteOffset, request.byteLength).indexOf('\r\n\r\n');
  return (end < 0 ? request.byteLength : end + 4) > UWS_MAX_HEAD_BYTES;
}

/** uWS answered `status` itself and closed: no answer of the service's came (raw-http leaves uWS' in `rest`). */
export function assertUwsAnswered(answer: Exchange, status: number): void {
  const text = answer.rest.toString('latin1');
  assert.deepEqual(
    { serviceAnswers: answer.responses.map((r) => r.status), uws: uwsOwnStatus(text), closed: answer.closedByServer },
    { serviceAnswers: [], uws: status, closed: true },
    text.slice(0, 300),
  );
}
