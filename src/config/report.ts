// `voice-hub config check`: every effective key, its value (as shown.ts shows it) and where it came from.
import { maskedView } from './mask.js';
import { own } from './own.js';
import { leafKeys } from './schema-keys.js';
import { jsonText, shownValue, type PublicForm } from './shown.js';
import type { LoadedConfig } from './types.js';

/** Which configuration file was read, as `config check` heads its report and `serve` logs it at start. */
export const configFileLine = (loaded: LoadedConfig): string => `configuration file: ${loaded.file ?? 'none (built-in defaults)'}`;

/**
 * `# configuration file: PATH` (or none), then one `Key = value  (source)` line per key, then what was
 * ignored. `publicForm`: see shown.ts. `stored`: the values stored through the API that are in effect,
 * by the key they override, shown in its place as what the service uses.
 */
export function formatConfigReport(loaded: LoadedConfig, publicForm: PublicForm, stored: ReadonlyMap<string, unknown> = new Map()): string[] {
  const lines = [`# ${configFileLine(loaded)}`];
  const leaves: Array<[string, unknown]> = [];
  flatten(maskedView(loaded, publicForm), [], leaves);
  for (const [key, value] of leaves) {
    const source = loaded.sources.get(key) ?? 'default';
    if (stored.has(key)) lines.push(`${key} = ${jsonText(stored.get(key))}  (api, over the ${source} value ${jsonText(value)})`);
    else lines.push(`${key} = ${jsonText(value)}  (${source})`);
  }
  // Said, or an operator who configured a token in the URL would think it lost.
  for (const { key, path, node } of leafKeys()) {
    if (node['x-public-form'] === undefined) continue;
    const value = path.reduce<unknown>((obj, segment) => own(obj as Record<string, unknown>, segment), loaded.config);
    if (shownValue(node, value, publicForm) !== value) lines.push(`# ${key} is shown in its public form: the parts that may hold credentials are left out`);
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
