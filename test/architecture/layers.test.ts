// The guard that keeps the source layout honest: every relative import in src/ may point only to its own layer
// or a lower one, and no two folders may import each other (directly or around a loop). Reads src/ only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * Layers from the top down; a file may import its own layer or any lower one. Adapters import the
 * transport's types (a route, a hub method's context) and are plugged into it by the wiring, so the
 * transport never imports an adapter and the domain never imports either.
 */
const LAYERS = ['composition', 'adapters', 'transport', 'domain', 'infrastructure', 'foundation'] as const;
type Layer = (typeof LAYERS)[number];

/** Each folder of src/ (or file at its top) and its layer; the longest matching entry wins. */
const LAYER_OF: Record<string, Layer> = {
  'app.ts': 'composition', // createApp: calls the factories below in dependency order
  'main.ts': 'composition', // the process: argv, signals, the data-directory lock
  wiring: 'composition',
  cli: 'composition',
  api: 'adapters', // hub methods, the hub event bridge and map
  'api/routes': 'adapters', // HTTP routes
  'api/openapi': 'adapters', // the API document, built from the routes and the hub event map
  mqtt: 'adapters', // publishes device and session events to a broker
  http: 'transport',
  hub: 'transport',
  voice: 'domain',
  devices: 'domain',
  settings: 'domain',
  health: 'domain',
  store: 'infrastructure',
  upstream: 'infrastructure', // the upstream voice server's link, protocol and the echo server
  'voice/opus': 'infrastructure', // the codec: packets, wasm decoder, PCM
  auth: 'infrastructure',
  process: 'infrastructure',
  systemd: 'infrastructure',
  config: 'foundation',
  log: 'foundation',
  runtime: 'foundation',
  'errors.ts': 'foundation',
  'well-formed.ts': 'foundation',
  'base64.ts': 'foundation', // strict Base64, checked by the hub binder, the hub methods and the upstream protocol
  'end-of-turn.ts': 'foundation', // the end-of-turn flush both transports batch their writes with
  'version.ts': 'foundation',
  'fifo.ts': 'foundation', // the queue read from a moving head (decoder jobs, stateful reconnect's frames)
  'json-depth.ts': 'foundation', // the nesting limits of JSON and MessagePack input, for the hub and request bodies
  'ignore-case.ts': 'foundation', // names compared regardless of case as ASP.NET Core compares them
  'trim.ts': 'foundation', // trimming by scanning (header values, prefixes): a pattern would backtrack
  'opus-format.ts': 'foundation', // the Opus rates and channel counts, which configuration validates against
  'message-cost.ts': 'foundation', // how the hub's budgets count a message, which configuration describes
  'url-host.ts': 'foundation', // a host as a URL writes it (listeners, the echo server, the broker's label)
  'zoned-url.ts': 'foundation', // IPv6 zones in URLs, which URL parsers refuse (the tools' requests, shown URLs)
  'monotonic-clock.ts': 'foundation', // durations without loading perf_hooks
  'bounded-file.ts': 'foundation', // reading a file the configuration names, bounded (configuration, certificates)
  'path-entry.ts': 'foundation', // what is at a path itself, a link not followed (configuration file, data files)
  'hidden-characters.ts': 'foundation', // what no line a person reads carries as it is (log lines, quoted values, the health table)
  'host-names.ts': 'foundation', // what a Host header and an AllowedHosts entry are (host filtering, configuration)
};

const rank = (layer: Layer): number => LAYERS.length - LAYERS.indexOf(layer);

/** The table entry for a path relative to src/ ('voice/opus/pcm.ts' -> 'voice/opus'), or undefined. */
export function entryOf(rel: string, table: Record<string, Layer> = LAYER_OF): string | undefined {
  for (let p = rel; p !== '.' && p !== ''; p = path.posix.dirname(p)) if (p in table) return p;
  return undefined;
}

/**
 * The unit of the cycle check: the table entry a file falls under (a folder with its sub-folders that have no
 * entry of their own; a file at the top of src/ alone), else its folder.
 */
function nodeOf(rel: string): string {
  return entryOf(rel) ?? path.posix.dirname(rel);
}

interface Edge { from: string; to: string }

/** Every relative import of every source file under src/, as paths relative to src/ with their extension. */
function importsOfSrc(): Edge[] {
  const files = fs.readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => /\.(ts|mts|mjs)$/.test(f));
  const known = new Set(files);
  const edges: Edge[] = [];
  for (const from of files) {
    const text = fs.readFileSync(path.join(SRC, from), 'utf8');
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), fileName));
      // Sources import their compiled names (.js for .ts): find the file behind each.
      const to = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base.replace(/\.mjs$/, '.d.mts')]
        .find((c) => known.has(c));
      assert.ok(to, `${from} imports ${fileName}, which is not a file in src/`);
      edges.push({ from, to });
    }
  }
  assert.ok(edges.length > 100, `only ${edges.length} imports found: is the parser reading src/?`);
  return edges;
}

/** Imports that point up the layer order, and files the table does not place. */
export function layerViolations(edges: Edge[], table: Record<string, Layer> = LAYER_OF): string[] {
  const out: string[] = [];
  for (const { from, to } of edges) {
    const a = entryOf(from, table);
    const b = entryOf(to, table);
    if (a === undefined || b === undefined) {
      out.push(`${a === undefined ? from : to} has no layer: add its folder to the table`);
      continue;
    }
    if (rank(table[b]!) > rank(table[a]!)) out.push(`${from} (${table[a]}) imports ${to} (${table[b]}): up the layers`);
  }
  return [...new Set(out)];
}

/** Groups of folders that import each other around a loop (strongly connected components of more than one). */
export function folderCycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const a = nodeOf(from);
    const b = nodeOf(to);
    if (!next.has(a)) next.set(a, new Set());
    if (!next.has(b)) next.set(b, new Set());
    if (a !== b) next.get(a)!.add(b);
  }
  // Tarjan's algorithm; the graph has a few dozen nodes, so recursion depth is no concern.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) cycles.push(group.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

test('no import in src/ points up the layer order', () => {
  assert.deepEqual(layerViolations(importsOfSrc()), []);
});

test('no two folders of src/ import each other, directly or around a loop', () => {
  assert.deepEqual(folderCycles(importsOfSrc()), []);
});

test('every entry of the layer table names a folder or file that exists', () => {
  const missing = Object.keys(LAYER_OF).filter((p) => !fs.existsSync(path.join(SRC, p)));
  assert.deepEqual(missing, []);
});

test('the checks catch an upward import, an unplaced folder and a folder cycle', () => {
  const edges: Edge[] = [
    { from: 'voice/session.ts', to: 'hub/index.ts' }, // domain -> transport
    { from: 'store/index.ts', to: 'errors.ts' }, // allowed
    { from: 'voice/opus/pcm.ts', to: 'voice/session.ts' }, // infrastructure -> domain
    { from: 'nowhere/x.ts', to: 'log/logger.ts' },
  ];
  assert.deepEqual(layerViolations(edges), [
    'voice/session.ts (domain) imports hub/index.ts (transport): up the layers',
    'voice/opus/pcm.ts (infrastructure) imports voice/session.ts (domain): up the layers',
    'nowhere/x.ts has no layer: add its folder to the table',
  ]);
  assert.deepEqual(folderCycles([
    { from: 'api/openapi/document.ts', to: 'http/router.ts' },
    { from: 'http/routes/config.ts', to: 'api/openapi/components.ts' }, // http/routes has no entry: it is http
    { from: 'log/logger.ts', to: 'config/types.ts' },
  ]), [['api/openapi', 'http']]);
});
