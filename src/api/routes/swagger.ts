// Swagger UI at /swagger and the OpenAPI document at /swagger/v1/swagger.json.
// The UI's files come from the swagger-ui-dist package and travel with the build, never from a CDN: a
// Pi on a workshop network may have no internet. Only the files of SWAGGER_ASSETS are served.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { createRequire } from 'node:module';
import { DomainError } from '../../errors.js';
import { SWAGGER_UI_FILES } from '../../runtime/asset-manifest.mjs';
import { requireAsset } from '../../runtime/assets.js';
import type { Reply, RequestInfo, Route } from '../../http/router.js';

/**
 * The swagger-ui-dist files the UI needs (plus its licence texts, which must travel with it): run-time
 * assets named `swagger/<name>`, beside the bundle or inside the single executables.
 */
export const SWAGGER_ASSETS: readonly string[] = SWAGGER_UI_FILES;

export const DOCUMENT_PATH = '/swagger/v1/swagger.json';

const CONTENT_TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.png': 'image/png',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
};
const contentTypeOf = (name: string): string => CONTENT_TYPES[path.extname(name)] ?? 'text/plain; charset=utf-8';

// The UI files change only with an upgrade: a day of caching, then revalidation by ETag. The page, its
// initializer and the document are revalidated on every load (a restart may change the document).
const ASSET_CACHE = 'public, max-age=86400';
const PAGE_CACHE = 'no-cache';

/**
 * The page's Content-Security-Policy. Its scripts and styles are the service's own files (the
 * initializer too, never inline), and it fetches only from the service (the document, Try it out): so
 * whatever text a response or the document holds, no script from elsewhere runs in the service's origin,
 * and nothing is sent elsewhere. Swagger UI sets element styles from script (allowed without
 * 'unsafe-inline': they go through the CSSOM) and shows images from data: and blob: URLs (its icons, an
 * image a response holds). Its one inline style element, the colours of the logo in its top bar
 * (`.logo_small_svg__cls-2{fill:#fff}...`), is allowed by its hash: an upgrade of swagger-ui-dist that
 * changes it fails test/openapi/swagger-ui.test.ts, where Chromium reports every violation.
 * `frame-ancestors 'none'` (and X-Frame-Options for browsers without CSP 2): no page on another origin
 * may frame the UI, whose buttons send requests with the token a technician gave it (clickjacking).
 */
export const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='; img-src 'self' data: blob:; connect-src 'self'; " +
  "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const PAGE_HEADERS: Readonly<Record<string, string>> = { 'Content-Security-Policy': PAGE_POLICY, 'X-Frame-Options': 'DENY' };

/**
 * The bytes of a Swagger UI file, through the asset lookup: inside a single executable, in `swagger/`
 * beside the bundle (`bundleDir`), or from swagger-ui-dist under development. Throws for a name outside
 * SWAGGER_ASSETS or a file the build lacks.
 */
export function loadSwaggerAsset(name: string, bundleDir?: string): Buffer {
  if (!SWAGGER_ASSETS.includes(name)) throw new Error(`${name} is not a Swagger UI asset`);
  return requireAsset(`swagger/${name}`, bundleDir);
}

function page(): string {
  // Absolute links: the page is served both at /swagger and at /swagger/index.html.
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>voice-hub API</title>
    <link rel="stylesheet" type="text/css" href="/swagger/swagger-ui.css">
    <link rel="stylesheet" type="text/css" href="/swagger/index.css">
    <link rel="icon" type="image/png" href="/swagger/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="/swagger/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/swagger/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="/swagger/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="/swagger/swagger-initializer.js" charset="UTF-8"></script>
  </body>
</html>
`;
}

// Not inline in the page, so that the page's Content-Security-Policy (PAGE_POLICY) needs no 'unsafe-inline'.
function initializer(): string {
  return `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(DOCUMENT_PATH)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    displayRequestDuration: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
    // The default would send the document to validator.swagger.io: no internet here, and not its business.
    validatorUrl: null
  });
};
`;
}

interface StaticFile {
  /** The uncompressed bytes: kept in memory, or read again from the build for the rare client without gzip. */
  readonly bytes: () => Buffer;
  /** Only for text worth compressing; swagger-ui-bundle.js shrinks from 1.7 MB to about 0.5 MB. */
  readonly gzipped: Buffer | undefined;
  readonly etag: string;
  readonly contentType: string;
  readonly cacheControl: string;
  /** Headers of the page itself (PAGE_HEADERS), on its 200 and 304 alike. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** node:zlib, loaded by the first page served rather than with the routes: most hubs never show Swagger. */
const zlib = (): typeof import('node:zlib') => createRequire(import.meta.url)('node:zlib') as typeof import('node:zlib');

/**
 * A file as served. With `reread` (a file of the build), only its gzipped form is kept when it has one:
 * browsers ask for gzip, and the UI's files are read back from the build for a client that does not,
 * instead of 2.5 MB staying in the heap for good after the first visit to /swagger.
 */
function staticFile(bytes: Buffer, contentType: string, cacheControl: string, reread?: () => Buffer, headers?: Readonly<Record<string, string>>): StaticFile {
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
  const gzipped = !contentType.startsWith('image/') && bytes.length > 1024 ? zlib().gzipSync(bytes) : undefined;
  const extra = headers ? { headers } : {};
  if (gzipped && reread) return { bytes: reread, gzipped, etag, contentType, cacheControl, ...extra };
  return { bytes: () => bytes, gzipped, etag, contentType, cacheControl, ...extra };
}

/** Whether Accept-Encoding allows gzip (RFC 9110 12.5.3: a q of 0 refuses). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  // RFC 9110 section 12.5.3: `gzip` named says it all, wherever it stands; `*` speaks only for codings not named.
  let wildcard: boolean | undefined;
  for (const item of header.split(',')) {
    const [coding, ...params] = item.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const accepted = q === undefined || Number(q.slice(2)) > 0;
    if (coding === 'gzip') return accepted;
    wildcard ??= accepted;
  }
  return wildcard ?? false;
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

function serve(file: StaticFile, request: RequestInfo): Reply {
  const gzip = file.gzipped !== undefined && acceptsGzip(request.headers['accept-encoding']);
  // The compressed bytes are another representation, so they get their own validator.
  const etag = gzip ? `${file.etag.slice(0, -1)}-gz"` : file.etag;
  const headers: Record<string, string> = { ...file.headers, 'Cache-Control': file.cacheControl, ETag: etag };
  if (file.gzipped) headers.Vary = 'Accept-Encoding';
  if (etagMatches(request.headers['if-none-match'], etag)) return { status: 304, headers };
  if (gzip) headers['Content-Encoding'] = 'gzip';
  return { status: 200, text: gzip ? file.gzipped : file.bytes(), contentType: file.contentType, headers };
}

export interface SwaggerOptions {
  /** Folder of the bundle (AppDeps.bundleDir): the UI files are then taken from the build only. */
  bundleDir?: string;
}

/**
 * The Swagger UI routes. `getDocument` is called once, on the first request for the document: by then
 * the route table it describes is complete. Files are read and compressed on first use, then kept (the UI's own files only compressed).
 */
export function swaggerRoutes(getDocument: () => object, opts: SwaggerOptions = {}): Route[] {
  const files = new Map<string, StaticFile>();
  const cached = (key: string, make: () => StaticFile): StaticFile => {
    let file = files.get(key);
    if (!file) files.set(key, (file = make()));
    return file;
  };
  const indexPage = (): StaticFile => cached('index.html', () => staticFile(Buffer.from(page()), CONTENT_TYPES['.html']!, PAGE_CACHE, undefined, PAGE_HEADERS));
  const common = { tag: 'Documentation', auth: {}, documented: false } as const;
  const uiPage = (path: string, operationId: string): Route => ({
    ...common,
    method: 'GET',
    path,
    operationId,
    summary: 'Swagger UI',
    responses: { 200: { description: 'The Swagger UI page', contentType: 'text/html' } },
    handler: ({ request }) => serve(indexPage(), request),
  });

  return [
    {
      ...common,
      method: 'GET',
      path: DOCUMENT_PATH,
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3 document',
      responses: { 200: { description: 'The OpenAPI document' } },
      handler: ({ request }) =>
        serve(
          cached(DOCUMENT_PATH, () => staticFile(Buffer.from(JSON.stringify(getDocument())), CONTENT_TYPES['.json']!, PAGE_CACHE)),
          request,
        ),
    },
    uiPage('/swagger', 'swaggerUi'),
    uiPage('/swagger/index.html', 'swaggerUiIndex'),
    {
      ...common,
      method: 'GET',
      path: '/swagger/{asset}',
      operationId: 'swaggerUiAsset',
      summary: 'A Swagger UI file',
      responses: { 200: { description: 'The file' }, 404: { description: 'Not a Swagger UI file' } },
      handler: ({ params, request }) => {
        const name = params.asset!;
        if (name === 'swagger-initializer.js') {
          return serve(cached(name, () => staticFile(Buffer.from(initializer()), CONTENT_TYPES['.js']!, PAGE_CACHE)), request);
        }
        // The allow-list is the only way to a file: a decoded `..%2F` or any other name is just unknown.
        if (!SWAGGER_ASSETS.includes(name)) throw new DomainError('not_found', `No Swagger UI file is named '${name}'.`);
        const read = (): Buffer => loadSwaggerAsset(name, opts.bundleDir);
        return serve(cached(name, () => staticFile(read(), contentTypeOf(name), ASSET_CACHE, read)), request);
      },
    },
  ];
}
