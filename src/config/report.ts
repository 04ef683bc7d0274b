// `voice-hub config check`: every effective key, its value (secrets masked) and where it came from.
import { maskedView } from './mask.js';
import type { LoadedConfig } from './types.js';

/** `# configuration file: PATH` (or none), then one `Key = value  (source)` line per key. */
export function formatConfigReport(loaded: LoadedConfig): string[] {
  const lines = [`# configuration file: ${loaded.file ?? 'none (built-in defaults)'}`];
  const leaves: Array<[string, unknown]> = [];
  flatten(maskedView(loaded), [], leaves);
  for (const [key, value] of leaves) {
    lines.push(`${key} = ${JSON.stringify(value)}  (${loaded.sources.get(key) ?? 'default'})`);
  }
  for (const text of loaded.ignored ?? []) lines.push(`# ${text}`);
  return lines;
}

function flatten(value: unknown, path: string[], out: Array<[string, unknown]>): void {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [name, v] of Object.entries(value)) flatten(v, [...path, name], out);
  } else {
    out.push([path.join('.'), value]);
  }
}
