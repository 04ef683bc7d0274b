// `voice-hub health [--url]`: asks a running service for /health and prints it as a table.
// Exit codes: 0 Healthy, 1 Degraded, 2 Unhealthy, 3 the service could not be reached or answered
// something other than a health report.
//
// Whatever listens at the address answers: another program on the port, a proxy's error page, another
// framework's health endpoint (ASP.NET Core's UIResponseWriter leaves null fields out), a file server.
// So the answer is read up to MAX_ANSWER_BYTES only, its shape is checked once (readHealthAnswer), and
// the table gets nothing but text: a field of the wrong type is shown as absent, never thrown on.
import type { HealthEntry, HealthStatus } from '../health/checks.js';
import type { HealthReport } from '../health/report.js';
import { exitCodeFor, formatHealthTable } from '../health/table.js';
import { INVALID_HOST_TEXT } from '../http/gate.js';
import { stripEnds } from '../trim.js';
import { urlHost } from '../url-host.js';
import { splitZone, withZone } from '../zoned-url.js';
import { shownName } from '../config/shown.js';
import { usageError } from './command.js';
import { HEALTH } from './commands.js';
import { CONFIG_FILE_FLAG } from './config-flags.js';
import { EXIT_UNREACHABLE, type CliConfig } from './load.js';
import { MAX_ANSWER_BYTES, readAtMost } from './bounded-answer.js';
import { deadline } from './deadline.js';
import { redirectNote, toolRequest } from './http-request.js';
import { untrustedCertificateHint } from './untrusted-certificate.js';
import { shownUrl } from './shown-url.js';
import { UNICODE_LINE_BREAKS, withHiddenEscaped } from '../hidden-characters.js';

const STATUSES: readonly string[] = ['Healthy', 'Degraded', 'Unhealthy'] satisfies HealthStatus[];
/** What the table shows for a field that is missing or not text. */
const ABSENT = '-';

export async function healthCommand(url: string, timeoutMs = 15_000): Promise<{ code: number; text: string }> {
  const stop = new AbortController();
  const limit = deadline(timeoutMs, stop.signal);
  try {
    return await askHealth(url, timeoutMs, stop, limit.signal);
  } finally {
    limit.clear();
  }
}

/** `signal` ends the request and the reading of its answer at the deadline; `stop` ends them past the size bound. */
async function askHealth(url: string, timeoutMs: number, stop: AbortController, signal: AbortSignal): Promise<{ code: number; text: string }> {
  // A URL with credentials is refused as usage (healthUrlFrom); one given here anyway is never shown.
  const target = withoutCredentials(url);
  // What the lines name: a query (an access token) is sent as given, never shown.
  const shown = shownUrl(url);
  const unreachable = (why: string) => ({ code: EXIT_UNREACHABLE, text: `voice-hub is not reachable at ${shown}: ${why}\n` });
  let res: Response;
  try {
    res = await toolRequest(target, { headers: { accept: 'application/json' }, signal });
  } catch (e) {
    return unreachable(failureText(e, timeoutMs));
  }
  const body = await readAtMost(res, stop);
  if ('failed' in body) return unreachable(`the answer broke off: ${failureText(body.failed, timeoutMs)}`);
  if ('tooLarge' in body) {
    return {
      code: EXIT_UNREACHABLE,
      text: `${shown} answered HTTP ${res.status} with more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB, far more than a voice-hub health report (a few KB): stopped reading\n`,
    };
  }
  let json: unknown;
  try {
    json = JSON.parse(body.bytes.toString('utf8'));
  } catch {
    json = undefined;
  }
  const report = readHealthAnswer(json);
  if (!report && res.status === 400 && body.bytes.toString('utf8') === INVALID_HOST_TEXT) {
    return {
      code: EXIT_UNREACHABLE,
      text: `${shown} refused the host name ${new URL(splitZone(target).text).hostname}: the service's AllowedHosts does not list it; ` +
        'ask with --url naming a listed host\n',
    };
  }
  if (!report) {
    const type = res.headers.get('content-type');
    // printable() trims, so each part's separating space goes outside it.
    const redirect = redirectNote(res, target);
    return {
      code: EXIT_UNREACHABLE,
      text: `${shown} answered HTTP ${res.status}${type ? ` (${printable(type)})` : ''}${redirect ? ` ${printable(redirect)}` : ''} without a voice-hub ` +
        'health report (JSON with a status of Healthy, Degraded or Unhealthy and its entries)\n',
    };
  }
  return { code: exitCodeFor(report.status), text: formatHealthTable(report) };
}

/** A failed request says only that it failed; the reason (ECONNREFUSED, a reset) is in its cause. */
function failureText(e: unknown, timeoutMs: number): string {
  if (e instanceof Error && e.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  const cause = (e as { cause?: { message?: unknown } }).cause;
  const why = typeof cause?.message === 'string' ? cause.message : e instanceof Error ? e.message : String(e);
  return printable(why) + untrustedCertificateHint(cause);
}

/**
 * The report in `json`, a parsed answer of any shape, or undefined when it is no health report: not an
 * object with a status of Healthy, Degraded or Unhealthy and an object of entries. Within a report, an
 * entry or field of another type is shown as absent; every text is made printable.
 */
export function readHealthAnswer(json: unknown): HealthReport | undefined {
  if (!isRecord(json) || typeof json.status !== 'string' || !STATUSES.includes(json.status) || !isRecord(json.entries)) return undefined;
  return {
    status: json.status as HealthStatus,
    totalDuration: textOr(json.totalDuration, ABSENT),
    entries: Object.fromEntries(Object.entries(json.entries).map(([name, entry]) => [printable(name), readEntry(entry)])),
  };
}

function readEntry(entry: unknown): HealthEntry {
  const e = isRecord(entry) ? entry : {};
  const exception = textOr(e.exception, undefined);
  return {
    // Shown as text by the table, so a status word voice-hub does not use is shown as it came.
    status: textOr(e.status, ABSENT) as HealthStatus,
    description: textOr(e.description, ''),
    duration: textOr(e.duration, ABSENT),
    data: {},
    tags: [],
    ...(exception !== undefined ? { exception } : {}),
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function textOr<T extends string | undefined>(v: unknown, absent: T): string | T {
  return typeof v === 'string' ? printable(v) : absent;
}

/** Line ends, Unicode's too: an answer's text is one cell of a table. */
const ANSWER_LINE_BREAKS = new RegExp(`[\\r\\n${UNICODE_LINE_BREAKS}]+`);

/**
 * One line without control characters: an answer's text must neither break the table nor reach the
 * terminal as escape sequences (colours, cursor moves, a retitled window), reordering marks or lone
 * surrogates (U+FFFD on a terminal, hiding what came).
 */
export function printable(text: string): string {
  const line = text
    .split(ANSWER_LINE_BREAKS)
    .map((part) => part.trim())
    .filter(Boolean)
    .join(' ')
    .replace(/\t/g, ' ');
  return withHiddenEscaped(line);
}

/** `url` without its user name and password, as it may be shown. */
function withoutCredentials(url: string): string {
  try {
    const { text, zone } = splitZone(url);
    const u = new URL(text);
    u.username = '';
    u.password = '';
    return withZone(u.href, zone);
  } catch {
    return url;
  }
}

/**
 * The /health address for `--url`, which takes the service's address as simulate's does
 * (`http://host:5000`, with or without the slash, or under a reverse proxy's prefix) or the full
 * health address (`http://host:5000/health`). `given` is an http(s) URL. One with a user name or
 * password is bad usage: /health asks for none.
 */
export function healthUrlFrom(given: string): string {
  // A link-local address's zone (`http://[fe80::1%25eth0]:5000`) is kept for the request to dial.
  const { text, zone } = splitZone(given);
  const url = new URL(text);
  if (url.username || url.password) {
    throw usageError(HEALTH, [`--url must not hold a user name or password (/health asks for none): give ${shownUrl(given)}`]);
  }
  const path = stripEnds(url.pathname, '/', false);
  url.pathname = /\/health$/i.test(path) ? path : `${path}/health`;
  return withZone(url.href, zone);
}

/**
 * `--url` names the service to ask; the configuration only names it when --url is not given. Anything
 * else of it (a certificate, a log level, API keys) plays no part in asking /health. So a configuration
 * flag beside --url (`--url http://pi:5000 --Server.Port 5001`, `--config other.json`) would be quietly
 * ignored, and the answer read as that of the service the operator meant: bad usage.
 */
export function refuseConfigWithUrl(cli: CliConfig): void {
  const given = [
    ...(cli.file !== undefined ? [`--${CONFIG_FILE_FLAG}`] : []),
    ...Object.keys(cli.flags).map((key) => `--${shownName(cli.flagNames?.[key] ?? key)}`),
  ];
  if (given.length === 0) return;
  throw usageError(HEALTH, [
    `${given.length === 1 ? `${given[0]} has` : `${given.slice(0, -1).join(', ')} and ${given.at(-1)} have`} no effect with --url, which names the service to ask: give --url alone, or leave it out to ask the configured Server.Host and Server.Port`,
  ]);
}

/**
 * The local service's /health address from its configuration. Port 0 names no service (it listens on
 * whichever port is free, which its log says): asking port 0 would fail as a refused connection, which
 * reads as a service that is down.
 */
export function localHealthUrl(host: string, port: number): string {
  if (port === 0) {
    throw usageError(HEALTH, ['Server.Port is 0 (the service listens on any free port, named in its log as "listening on"): give its address with --url']);
  }
  return `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : urlHost(host)}:${port}/health`;
}
