// A CommandSpec as a yargs command: its --help shows its own flags only, and before it runs, every
// argument is checked. An unknown flag or command, a missing or repeated value, a value of the wrong
// type or an extra argument is bad usage: exit 64 (EX_USAGE) with one line per problem, a "did you
// mean" where a known name is close, and where to find the command's help. yargs' own .strict() is not
// used: it would refuse the configuration keys in dot form, which no list of options can name, and
// word its messages (and pick its exit code) itself.
import yargs, { type Argv, type CommandModule } from 'yargs';
import { leafKeys } from '../config/schema-keys.js';
import { isSecretFlag, secretFlagKey } from '../config/mask.js';
import { closest } from '../config/spelling.js';
import { Problems } from '../config/problems.js';
import { resolveFlag } from '../config/load.js';
import { oneLine } from '../log/logger.js';
import { shownName } from '../config/shown.js';
import { COMMANDS, exitsText, SERVE, type CommandSpec } from './commands.js';
import { CONFIG_FILE_FLAG, configYargsOptions, readConfigFlag, type ShortFlag } from './config-flags.js';
import { CliExit, EXIT_USAGE, type CliConfig } from './load.js';
import { orList, readOption, singleText, yargsOption, type OptionSpecs, type OptionValues } from './options.js';

export interface ParsedArgs<S extends OptionSpecs> {
  options: OptionValues<S>;
  /** The positional argument, one of the declared choices, when the command has one. */
  positional: string | undefined;
  /** `--config` and the configuration flags, for loadCliConfig. */
  config: CliConfig;
}

/** How the messages and the help pointer name the command (serve's help is the top-level one). */
export const invocation = (spec: CommandSpec | undefined): string => (spec && spec !== SERVE ? `voice-hub ${spec.name}` : 'voice-hub');

export function usageError(spec: CommandSpec | undefined, problems: readonly string[]): CliExit {
  const who = invocation(spec);
  // A command line of 10,000 unknown flags is one mistake: listed as the configuration's problems are.
  const listed = new Problems();
  // A problem quotes what was typed, which may hold a newline: one problem, one line.
  for (const p of problems) listed.add(oneLine(p));
  return new CliExit(EXIT_USAGE, [...listed.lines().map((p) => `${who}: ${p}`), `Run '${who} --help' for usage.`]);
}

/**
 * What must be refused before yargs parses, one line each:
 * - A flag that takes a value (a configuration key, `--config`, or a command's own secret such as
 *   simulate's --api-key) followed by a word that starts with '-': yargs would read that word as flags of
 *   its own (`-bob` as -b -o -b, the secret `-xSECRET` as -x -S -E ... spelled out in every problem
 *   line) and the flag as given no value, or, for a number (`--port -1`), take it as the value: the same
 *   words meant one thing or another by the shape of the word. The word is never quoted (it may be a
 *   secret); the line says how such a value is written.
 * - Flags named like a member of Object.prototype (`--constructor`, `--toString`), which no command
 *   takes: yargs looks flag names up in plain objects and throws a TypeError on these.
 * - A value given to --help, -h or --version (see BOOLEAN_WORDS).
 * `spec`: the command the line names (commandOf), whose configuration flags are known.
 */
export function preParseProblems(args: readonly string[], spec: CommandSpec): string[] {
  const problems: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') break;
    const secret = /^--?([^=]+)(=?)(.*)$/.exec(arg);
    const isConfigFlag = secret !== null && arg.startsWith('--') && takesConfigValue(spec, secret[1]!);
    if (secret && (isSecret(secret[1]!) || isConfigFlag)) {
      // In the spelling the command line takes (`--Mqtt:Password` would be refused in turn).
      const key = secretFlagKey(secret[1]!);
      const flag = key !== undefined && /:|__/.test(secret[1]!) ? `--${key}` : `${arg.startsWith('--') ? '--' : '-'}${secret[1]}`;
      const given = secret[2] === '=';
      // `--port --data-dir x` is a value left out, which the parser names; a secret's next word is never read.
      const next = args[i + 1];
      if (!given && next?.startsWith('-') && (isSecret(secret[1]!) || !isFlagOf(spec, next))) {
        problems.push(`${flag} needs a value; a value that starts with '-' must be given as ${flag}=VALUE`);
        i++;
        continue;
      }
      if (!isSecret(secret[1]!)) continue;
      // The word after the value (or after an empty `--Key=`) is taken as an argument of the command, and
      // an unexpected one is quoted: when it is no word a command takes, it may well be a secret too
      // (`--ApiKeys k1 k2`, `--Mqtt.Password= SECRET`, a secret with spaces left unquoted:
      // `--Mqtt.Password=correct horse battery`).
      const after = given ? i + 1 : i + 2;
      const word = args[after];
      if (word !== undefined && !word.startsWith('-') && !COMMAND_WORDS.has(word)) {
        problems.push(given
          ? secret[3] === ''
            ? `${flag}= has no value; write the value right after the '=' (${flag}=VALUE)`
            : `${flag}=VALUE is followed by a word that is no command or argument (not shown: it may be part of the value); quote a value that holds spaces`
          : `${flag} takes one word: the word after its value is no command or argument (an array is given item by item, --ApiKeys.0 VALUE --ApiKeys.1 VALUE)`);
        i = after;
        continue;
      }
    }
    const name = /^--([^=]+)/.exec(arg)?.[1];
    if (name !== undefined && Object.hasOwn(Object.prototype, name)) problems.push(`unknown flag --${name}`);
    const bare = /^(--help|-h|--version)(=|$)/.exec(arg);
    if (bare && (bare[2] === '=' || BOOLEAN_WORDS.has(args[i + 1] ?? ''))) {
      problems.push(`${bare[1]} takes no value`);
      if (bare[2] !== '=') i++;
    }
  }
  return problems;
}

/** Whether `--name` is `--config` or a configuration key of `spec` (dot form or one of its short flags), all of which take a value. */
const takesConfigValue = (spec: CommandSpec, name: string): boolean =>
  spec.config !== undefined && !Object.hasOwn(spec.options, name) && (name === CONFIG_FILE_FLAG || resolveFlag(name, spec.config.short) !== undefined);

/** Whether `word` is `--help`, `--version` or a flag `spec` takes, given without its value. */
const isFlagOf = (spec: CommandSpec, word: string): boolean => {
  const name = /^--([^=]+)$/.exec(word)?.[1];
  return name !== undefined && (name === 'help' || name === 'version' || Object.hasOwn(spec.options, name) || takesConfigValue(spec, name));
};

/**
 * The command a line names, found before parsing as yargs finds it: the first word that is no flag and
 * no flag's value (a flag without `=` takes the next word unless that starts with '-', as yargs reads
 * flags it was not told are switches). serve when that word is none of the commands, or there is none.
 * Usage errors found before parsing name it, as those found after do.
 */
export function commandOf(args: readonly string[]): CommandSpec {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') break;
    if (arg.startsWith('-') && arg.length > 1) {
      const switchOrGiven = arg.includes('=') || SWITCHES.has(arg);
      if (!switchOrGiven && args[i + 1] !== undefined && !args[i + 1]!.startsWith('-')) i++;
      continue;
    }
    return COMMANDS.find((c) => c.name === arg) ?? SERVE;
  }
  return SERVE;
}

/** The program's own switches, which take no value: what yargs knows of before it knows the command. */
const SWITCHES: ReadonlySet<string> = new Set(['--help', '-h', '--version']);

/**
 * yargs reads --help and --version as booleans, so `--help=false` or `--help false` would quietly start the
 * service instead of printing help; like getopt's "doesn't allow an argument", they take no value.
 */
const BOOLEAN_WORDS: ReadonlySet<string> = new Set(['true', 'false']);

/** The words a command line may hold besides flags and their values: command names and their arguments. */
const COMMAND_WORDS: ReadonlySet<string> = new Set(COMMANDS.flatMap((c) => [c.name, ...(c.positional?.choices ?? [])]));

/** Whether `--name` takes a secret, for any command (before parsing, the command is not known yet). */
export const isSecret = (name: string): boolean =>
  isSecretFlag(name) || COMMANDS.some((c) => Object.hasOwn(c.options, name) && c.options[name]!.secret === true);

/** `forHelp`: the line asks for help (checkBeforeHelp), which needs no positional argument (`voice-hub token --help`). */
export function yargsCommand<S extends OptionSpecs>(spec: CommandSpec<S>, run: (args: ParsedArgs<S>) => Promise<void> | void, forHelp = false): CommandModule {
  const isDefault = spec === (SERVE as CommandSpec);
  const pos = spec.positional;
  return {
    // `[kind]`, not `<kind>`: yargs would refuse a missing one with its own message; readPositionals says it.
    command: isDefault ? [spec.name, '$0'] : `${spec.name}${pos ? ` [${pos.name}]` : ''}`,
    describe: spec.summary,
    builder: (y: Argv) => {
      // --version belongs to the program, not to each command.
      if (!isDefault) y.version(false).usage(`$0 ${spec.name}${pos ? ` <${pos.name}>` : ''} [options]\n\n${[spec.summary, spec.details].filter(Boolean).join('. ')}`);
      if (pos) y.positional(pos.name, { describe: `${pos.describe}: ${orList(pos.choices)}`, type: 'string' });
      for (const [name, option] of Object.entries(spec.options)) y.option(name, yargsOption(option));
      if (spec.config) {
        y.options(configYargsOptions(spec.config.short));
        y.epilogue(
          'Any configuration key can also be given as a flag in dot form (--Server.Port 5001; array items as\n' +
            `--ApiKeys.0 KEY) or in the environment as Section__Key (Server__Port=5001). ${spec.config.why}`,
        );
      }
      if (spec.epilogue) y.epilogue(spec.epilogue);
      y.epilogue(exitsText(spec));
      return y;
    },
    handler: (argv) => {
      const topic = isDefault ? helpTopic(argv) : undefined;
      return topic ? showHelp(topic) : run(parseArgs(spec, argv, forHelp));
    },
  };
}

/**
 * `voice-hub help COMMAND [ARGUMENT]`: the command whose help is asked for, or a usage error. yargs
 * itself reads `help` only as the last word (`voice-hub help`, `voice-hub health help`), so this word
 * order reaches the default command.
 */
function helpTopic(argv: Record<string, unknown>): CommandSpec | undefined {
  const words = ((argv._ as unknown[] | undefined) ?? []).map(String);
  if (words[0] !== 'help' || words.length < 2) return undefined;
  const name = words[1]!;
  const spec = COMMANDS.find((c) => c.name === name);
  if (!spec) {
    const hint = closest(name, COMMANDS.map((c) => c.name));
    throw usageError(undefined, [`unknown command '${shownName(name)}'${hint ? ` (did you mean ${hint}?)` : `: ${orList(COMMANDS.map((c) => c.name))}`}`]);
  }
  // The command's argument may come along (`help config check`), as it may with --help.
  const extra = words.slice(2).filter((w, i) => !(i === 0 && spec.positional?.choices.includes(w)));
  if (extra.length > 0) throw usageError(spec, extra.map((w) => `unexpected argument '${w}'`));
  // The flags beside it are checked as that command's, as with --help (checkBeforeHelp): `help health --bogus` printed help, exit 0.
  parseArgs(spec, { ...argv, _: [spec.name] }, true);
  return spec;
}

/**
 * Whether the arguments may ask for help or the version: `--help`, `-h` alone or among short flags
 * (`-hx`), `--version`, before `--`. A false alarm (a value that starts with `-` and holds an h) costs
 * one more check, never a refusal.
 */
const asksForHelpOrVersion = (args: readonly string[]): boolean => {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '--version' || /^-[^-=]*h/.test(a));
};

/**
 * yargs prints a command's help when --help or -h is anywhere on its line, or the version for
 * --version, and checks nothing else: `config check -hx` printed help and `--version --bogus` the
 * version, both exit 0 with a flag unknown, and a script testing a command line that way learned
 * nothing. The line is checked first as a run would check it (parseArgs, the same usage error and
 * exit 64); a line with no problem then gets its help or version.
 */
export async function checkBeforeHelp(args: readonly string[]): Promise<void> {
  if (!asksForHelpOrVersion(args)) return;
  // --version, which the check's parser does not declare, is yargs' to answer after it.
  let parser = programParser(args.filter((a) => a !== '--version')).help(false).version(false);
  for (const spec of COMMANDS) parser = parser.command(yargsCommand(spec, () => undefined, true));
  await parser
    .fail((msg, err) => {
      if (err) throw err;
      throw usageError(commandOf(args), [msg]);
    })
    .parseAsync();
}

/** The program's yargs parser as every parse sets it up: its name, no wrapping, values left as typed. */
export function programParser(args: readonly string[]): Argv {
  return yargs(args)
    .scriptName('voice-hub')
    .wrap(null)
    // Values stay the text typed, and --no-x is not read as x=false: src/cli/options.ts types and checks them.
    .parserConfiguration({ 'dot-notation': false, 'camel-case-expansion': false, 'parse-numbers': false, 'parse-positional-numbers': false, 'boolean-negation': false });
}

/**
 * What `voice-hub COMMAND --help` prints, and the same exit 0: a program parser with only that
 * command, and -h as main.ts has it.
 */
async function showHelp(spec: CommandSpec): Promise<void> {
  await programParser([spec.name, '--help'])
    .command(yargsCommand(spec, () => undefined))
    .help()
    .alias('h', 'help')
    .parseAsync();
}

/** Every argument yargs found, checked against the command's declaration; throws a usage error listing every problem. */
export function parseArgs<S extends OptionSpecs>(spec: CommandSpec<S>, argv: Record<string, unknown>, forHelp = false): ParsedArgs<S> {
  const problems: string[] = [];
  const short: readonly ShortFlag[] = spec.config?.short ?? [];
  const options: Record<string, unknown> = {};
  const flagNames: Record<string, string> = {};
  const config: CliConfig = { flags: {}, flagNames };
  const setBy = new Map<string, string>();
  /** Per array (lower case): the first flag that gives it whole and the first that gives an item of it. */
  const arrays = new Map<string, { key: string; whole?: string; item?: string }>();

  for (const [name, raw] of Object.entries(argv)) {
    if (name === '_' || name === '$0' || name === pos(spec) || name === 'help' || name === 'h') continue;
    const own = Object.hasOwn(spec.options, name) ? spec.options[name] : undefined;
    if (own) {
      const read = readOption(name, own, raw);
      if (read.ok) options[name] = read.value;
      else problems.push(read.problem);
      continue;
    }
    if (spec.config && name === CONFIG_FILE_FLAG) {
      const read = singleText(name, raw);
      if (read.ok) config.file = read.value;
      else problems.push(read.problem);
      continue;
    }
    const flag = spec.config ? readConfigFlag(name, raw, short) : undefined;
    if (!flag) problems.push(unknownFlag(spec, name));
    else if (!flag.ok) problems.push(flag.problem);
    else {
      const id = flag.value.key.toLowerCase();
      const earlier = setBy.get(id);
      if (earlier) problems.push(`${dash(earlier)} and ${dash(name)} both set ${flag.value.key}: give one`);
      setBy.set(id, name);
      config.flags[flag.value.key] = flag.value.value;
      flagNames[flag.value.key] = name;
      const array = flag.value.array;
      if (array) {
        const given = arrays.get(array.key.toLowerCase()) ?? { key: array.key };
        if (array.whole) given.whole ??= name;
        else given.item ??= name;
        arrays.set(array.key.toLowerCase(), given);
      }
    }
  }
  // The whole array and one of its items are two values for one place: one of them would be lost.
  for (const { key, whole, item } of arrays.values()) {
    if (whole !== undefined && item !== undefined) {
      problems.push(`${dash(whole)} and ${dash(item)} both set ${key}: give the array whole (${dash(whole)} repeated) or by index, not both`);
    }
  }
  for (const [name, option] of Object.entries(spec.options)) {
    if (options[name] === undefined) {
      if (option.kind === 'boolean') options[name] = false;
      else if (option.default !== undefined) options[name] = option.default;
    }
  }

  const positional = readPositionals(spec, argv, problems, forHelp);
  if (problems.length > 0) throw usageError(spec, problems);
  return { options: options as OptionValues<S>, positional, config };
}

const pos = (spec: CommandSpec): string | undefined => spec.positional?.name;
/** A flag as typed, cut short: what the user typed is quoted back, whatever its length. */
const dash = (name: string): string => (name.length === 1 ? `-${name}` : `--${shownName(name)}`);

function readPositionals(spec: CommandSpec, argv: Record<string, unknown>, problems: string[], forHelp: boolean): string | undefined {
  const rest = ((argv._ as unknown[] | undefined) ?? []).map(String);
  const named = rest[0] === spec.name;
  if (named) rest.shift();
  if (spec === SERVE && !named && rest.length > 0) {
    // `voice-hub confg check`: the default command got a word it does not take, so it was meant as a command.
    const hint = closest(rest[0]!, COMMANDS.map((c) => c.name));
    problems.push(`unknown command '${shownName(rest[0]!)}'${hint ? ` (did you mean ${hint}?)` : ''}`);
    return undefined;
  }
  for (const extra of rest) problems.push(`unexpected argument '${shownName(extra)}'`);
  const p = spec.positional;
  if (!p) return undefined;
  const value = argv[p.name];
  if (value === undefined) {
    if (!forHelp) problems.push(`missing <${p.name}>: ${orList(p.choices)}`);
    return undefined;
  }
  const text = String(value);
  if (p.choices.includes(text)) return text;
  const hint = closest(text, p.choices);
  problems.push(`unknown ${p.name} '${shownName(text)}'${hint ? ` (did you mean ${hint}?)` : `: ${orList(p.choices)}`}`);
  return undefined;
}

function unknownFlag(spec: CommandSpec, name: string): string {
  // ASP.NET Core's own spelling of a key (`--Server:Port`) and the environment's (`Server__Port`) point to the dot form.
  const hint = closest(name, flagsOf(spec)) ?? (spec.config ? closest(name.replace(/:|__/g, '.'), leafKeys().map((k) => k.key)) : undefined);
  if (hint) return `unknown flag ${dash(name)} (did you mean --${hint}?)`;
  const owners = COMMANDS.filter((c) => c !== spec && flagsOf(c).includes(name)).map((c) => c.name);
  if (owners.length > 0) return `unknown flag ${dash(name)}: it is a flag of ${orList(owners)}, not of ${spec.name}`;
  return `unknown flag ${dash(name)}`;
}

function flagsOf(spec: CommandSpec): string[] {
  return [...Object.keys(spec.options), ...(spec.config ? [CONFIG_FILE_FLAG, ...spec.config.short] : [])];
}
