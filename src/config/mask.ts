// The effective configuration as it may be shown (`config check`, logs, docs), and other processes'
// command lines as they may be quoted: each value as shown.ts says (secrets as "***", a URL that may
// carry credentials in its public form), and time spans back in .NET text, as they were configured.
import { resolveFlag } from './load.js';
import { own, setOwn } from './own.js';
import { CONFIG_SCHEMA, type SchemaNode } from './schema.js';
import { SECRET_KEYS, type Resolved } from './schema-keys.js';
import { toJsonValue } from './schema-value.js';
import { MASK, shownArgument, shownValue, type PublicForm } from './shown.js';
import type { LoadedConfig } from './types.js';

export { MASK, SECRET_KEYS };

/** A JSON tree shaped like appsettings.json; safe to print. `publicForm`: see shown.ts. */
export function maskedView(loaded: LoadedConfig, publicForm: PublicForm): Record<string, unknown> {
  return view(loaded.config, CONFIG_SCHEMA, [], loaded.timeSpanTexts, publicForm) as Record<string, unknown>;
}

function view(value: unknown, node: SchemaNode, path: readonly string[], texts: ReadonlyMap<string, string>, publicForm: PublicForm): unknown {
  if (node.type !== 'object' || typeof value !== 'object' || value === null) {
    return shownValue(node, texts.get(path.join('.')) ?? toJsonValue(node, value), publicForm);
  }
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(obj)) {
    const child = own(node.properties, name) ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
    // A key the schema does not know cannot be judged, so it is not shown.
    if (child) setOwn(out, name, view(v, child, [...path, name], texts, publicForm));
  }
  return out;
}

/** The key the flag `--name` sets, in every spelling: dots, ASP.NET Core's colons, the environment's `__`, any case, a short flag. */
const flagKey = (name: string): Resolved | undefined => resolveFlag(name.replace(/:|__/g, '.'));

/**
 * Whether the flag `--name` sets a secret, in every spelling the command line resolves or points to the
 * dot form from.
 */
export function isSecretFlag(name: string): boolean {
  return secretFlagKey(name) !== undefined;
}

/** The secret key (dot form, the schema's spelling: `Mqtt.Password`, `ApiKeys.0`) the flag `--name` sets, if it sets one. */
export function secretFlagKey(name: string): string | undefined {
  const resolved = flagKey(name);
  if (resolved?.node.writeOnly !== true) return undefined;
  return [...resolved.path, ...(resolved.kind === 'item' ? [resolved.index] : [])].join('.');
}

/**
 * Whether `--name` is a command's own option that takes a secret (`simulate --admin-token`), which no
 * configuration key describes: the commands are defined above this layer, so their caller says.
 */
export type SecretOption = (name: string) => boolean;

/**
 * A command line (argv) with the value of each flag that may not be shown as it is replaced as
 * shown.ts says (`--Mqtt.Password ***`, `--voice-server-url=ws://host/voice`), and of each secret
 * option of a command, so that quoting it still tells which process it is. The word after such a bare
 * flag is replaced whatever it looks like: a value may start with '-'.
 */
export function maskSecretArgs(args: readonly string[], publicForm: PublicForm, secretOption: SecretOption): string[] {
  const out = [...args];
  for (let i = 0; i < out.length; i++) {
    const flag = /^--?([^=]+)(=?)/.exec(out[i]!);
    const node = flag ? flagKey(flag[1]!)?.node : undefined;
    if (!flag || (!node && !secretOption(flag[1]!))) continue;
    const at = flag[2] ? i : i + 1;
    if (at >= out.length) continue;
    const value = flag[2] ? out[i]!.slice(flag[0].length) : out[at]!;
    const shown = node ? shownArgument(node, value, publicForm) : MASK;
    if (shown === undefined) continue;
    out[at] = flag[2] ? flag[0] + shown : shown;
    i = at;
  }
  return out;
}
