// The effective configuration as it may be shown (`config check`, logs, docs): secrets replaced by
// "***" when set, an empty secret left "" so "not set" stays visible (secrets never appear in logs,
// responses or `config check` output), and time spans back in .NET text, as they were configured.
import { resolveFlag } from './load.js';
import { own, setOwn } from './own.js';
import { CONFIG_SCHEMA, SECRET_KEYS, type SchemaNode } from './schema.js';
import { toJsonValue } from './schema-value.js';
import type { LoadedConfig } from './types.js';

export { SECRET_KEYS };

export const MASK = '***';

/** A JSON tree shaped like appsettings.json; safe to print. */
export function maskedView(loaded: LoadedConfig): Record<string, unknown> {
  return view(loaded.config, CONFIG_SCHEMA, [], loaded.timeSpanTexts) as Record<string, unknown>;
}

function view(value: unknown, node: SchemaNode, path: readonly string[], texts: ReadonlyMap<string, string>): unknown {
  if (node.writeOnly) return mask(value);
  if (node.type !== 'object' || typeof value !== 'object' || value === null) return texts.get(path.join('.')) ?? toJsonValue(node, value);
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(obj)) {
    const child = own(node.properties, name) ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
    // A key the schema does not know cannot be judged, so it is not shown.
    if (child) setOwn(out, name, view(v, child, [...path, name], texts));
  }
  return out;
}

function mask(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(mask);
  return value === '' ? '' : MASK;
}

/**
 * Whether the flag `--name` sets a secret, in every spelling the command line resolves or points to the
 * dot form from: dots, ASP.NET Core's colons, the environment's `__`, any case, a short flag.
 */
export function isSecretFlag(name: string): boolean {
  return secretFlagKey(name) !== undefined;
}

/** The secret key (dot form, the schema's spelling: `Mqtt.Password`, `ApiKeys.0`) the flag `--name` sets, if it sets one. */
export function secretFlagKey(name: string): string | undefined {
  const resolved = resolveFlag(name.replace(/:|__/g, '.'));
  if (resolved?.node.writeOnly !== true) return undefined;
  return [...resolved.path, ...(resolved.kind === 'item' ? [resolved.index] : [])].join('.');
}

/**
 * A command line (argv) with the value of each secret flag replaced by MASK (`--Mqtt.Password ***`,
 * `--Mqtt.Password=***`), so that quoting it still tells which process it is. The word after a bare
 * secret flag is masked whatever it looks like: a value may start with '-'.
 */
export function maskSecretArgs(args: readonly string[]): string[] {
  const out = [...args];
  for (let i = 0; i < out.length; i++) {
    const flag = /^--?([^=]+)(=?)/.exec(out[i]!);
    if (!flag || !isSecretFlag(flag[1]!)) continue;
    if (flag[2]) out[i] = flag[0] + MASK;
    else if (i + 1 < out.length) out[++i] = MASK;
  }
  return out;
}
