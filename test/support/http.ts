// Small HTTP client for tests: exact status, headers and body, nothing added behind our back.
export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string | Uint8Array; headers?: Record<string, string>; token?: string; timeoutMs?: number } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Uint8Array | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let res: Response;
  try {
    res = await fetch(base + path, { method, headers, body, signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000) });
  } catch (err) {
    // undici says only "fetch failed"; what failed (a reset, a refused or timed-out connect) is its cause.
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (cause === undefined) throw err;
    throw new Error(`${method} ${path}: ${(err as Error).message}: ${cause.code ?? ''} ${cause.message ?? ''}`.trim(), { cause });
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
