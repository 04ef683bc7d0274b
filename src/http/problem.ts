// RFC 7807 problem bodies as ASP.NET Core writes them, and the one place
// where domain error codes become HTTP status codes.
import { DomainError, newTraceId, type ErrorCode } from '../errors.js';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  traceId: string;
  errors?: Record<string, string[]>;
}

const STATUS: Record<ErrorCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media: 415,
  upstream_unavailable: 502,
  unavailable: 503,
};

// ASP.NET Core's ProblemDetails defaults: RFC 9110 section links and reason phrases.
const DEFAULTS: Record<number, { type: string; title: string }> = {
  400: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1', title: 'Bad Request' },
  401: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.2', title: 'Unauthorized' },
  403: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.4', title: 'Forbidden' },
  404: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.5', title: 'Not Found' },
  405: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.6', title: 'Method Not Allowed' },
  409: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.10', title: 'Conflict' },
  413: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.14', title: 'Content Too Large' },
  414: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.15', title: 'URI Too Long' },
  415: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.16', title: 'Unsupported Media Type' },
  // Not in RFC 9110: RFC 6585 defines it.
  431: { type: 'https://tools.ietf.org/html/rfc6585#section-5', title: 'Request Header Fields Too Large' },
  500: { type: 'https://tools.ietf.org/html/rfc9110#section-15.6.1', title: 'An error occurred while processing your request.' },
  502: { type: 'https://tools.ietf.org/html/rfc9110#section-15.6.3', title: 'Bad Gateway' },
  503: { type: 'https://tools.ietf.org/html/rfc9110#section-15.6.4', title: 'Service Unavailable' },
};

export const VALIDATION_TITLE = 'One or more validation errors occurred.';

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

export function problem(status: number, detail?: string, extra?: Partial<Problem>): Problem {
  const d = DEFAULTS[status] ?? DEFAULTS[500]!;
  // Members in the order ASP.NET Core writes them (ProblemDetails' JsonPropertyOrder: type, title,
  // status, detail; then ValidationProblemDetails' errors; the traceId extension data always last),
  // since clients and log tooling written against ASP.NET see the body as text too.
  const p: Partial<Problem> = { type: extra?.type ?? d.type, title: extra?.title ?? d.title, status: extra?.status ?? status };
  const text = extra?.detail ?? detail;
  if (text !== undefined) p.detail = text;
  if (extra?.errors !== undefined) p.errors = extra.errors;
  return { ...p, traceId: extra?.traceId ?? newTraceId() } as Problem;
}

/** `traceId`: the request's (trace-context.ts); a new one without it. */
export function problemFromError(e: DomainError, traceId = newTraceId()): Problem {
  if (e.code === 'invalid_argument' && e.fields) return problem(400, e.message, { title: VALIDATION_TITLE, errors: { ...e.fields }, traceId });
  return problem(statusOf(e.code), e.message, { traceId });
}
