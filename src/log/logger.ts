// One line per event on stderr. Under journald (stderr is the stream JOURNAL_STREAM names) each line carries a syslog
// priority prefix so `journalctl -p` filters work (docs/operations.md, "Logging").
import { fstatSync } from 'node:fs';
import type { LogLevelName } from '../config/types.js';
import { caseKey } from '../ignore-case.js';
import { BoundedOutput, MAX_UNWRITTEN_LOG_BYTES } from './bounded-output.js';
import { BIDI_CONTROLS, CONTROL_CHARACTERS, HIDDEN_CHARACTERS, UNICODE_LINE_BREAKS, unicodeEscape } from '../hidden-characters.js';

const ORDER: Record<LogLevelName, number> = {
  Trace: 0, Debug: 1, Information: 2, Warning: 3, Error: 4, Critical: 5, None: 6,
};
const SYSLOG: Record<LogLevelName, number> = {
  Trace: 7, Debug: 7, Information: 6, Warning: 4, Error: 3, Critical: 2, None: 7,
};
const SHORT: Record<LogLevelName, string> = {
  Trace: 'trce', Debug: 'dbug', Information: 'info', Warning: 'warn', Error: 'fail', Critical: 'crit', None: '',
};

export interface Logger {
  trace(msg: string): void;
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  critical(msg: string): void;
  enabled(level: LogLevelName): boolean;
  /** A logger for a named category (`Hub`, `Upstream`, `Mqtt`, `Storage`, `Http`, ...). */
  child(category: string): Logger;
}

export interface LogOptions {
  /** Category -> minimum level; `Default` applies to categories not listed. */
  levels: Readonly<Record<string, LogLevelName>>;
  write?: (line: string) => void;
  journald?: boolean;
  timestamps?: boolean;
}

/** Category names match case-insensitively, as .NET's logging configuration does. */
function levelFor(levels: Readonly<Record<string, LogLevelName>>, category: string): LogLevelName {
  const wanted = caseKey(category);
  for (const [name, level] of Object.entries(levels)) if (caseKey(name) === wanted) return level;
  return levels.Default ?? 'Information';
}

/** Line ends, Unicode's included: each would split one event into several entries and allow forging. */
const LINE_BREAKS = new RegExp(`[\\r\\n${UNICODE_LINE_BREAKS}]+`, 'g');
/**
 * What a log line must not carry as is, since messages quote what clients sent (ids, names, close
 * reasons): C0 and C1 controls (terminal escape sequences, NUL, backspace), the invisible marks that
 * reorder or hide text on a technician's screen (Unicode's Bidi_Control marks: the overrides, embeddings
 * and isolates, U+200E/F and the Arabic letter mark U+061C, which reorders as U+200F does), and lone
 * surrogates, which have no UTF-8 form and would reach the journal as U+FFFD, hiding what came.
 */
const HIDDEN = new RegExp(HIDDEN_CHARACTERS, 'g');
const escapeHidden = (c: string): string => {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : unicodeEscape(c);
};

/**
 * The most UTF-16 code units of text a line carries. journald splits a line past its LineMax (48 KiB
 * by default) into entries of their own, the rest without the priority prefix: a client that gets a
 * 60 KB hub method name logged would write an entry of its choosing. 8192 code units are at most
 * 24 KiB of UTF-8, and far more than any message of the service's own (a stack trace is 1-2 KB).
 */
export const MAX_LINE_TEXT = 8192;

/**
 * One event, one line: line ends become spaces, other hidden characters a visible escape (`\x1b`),
 * and text past MAX_LINE_TEXT is cut, saying how much was left out.
 */
export function oneLine(msg: string): string {
  const flat = msg.replace(LINE_BREAKS, ' ');
  // Escapes only lengthen: text past the bound is never escaped, so a long message costs no more than a short one.
  if (flat.length > MAX_LINE_TEXT) return cut(flat);
  const text = flat.replace(HIDDEN, escapeHidden);
  return text.length <= MAX_LINE_TEXT ? text : cut(flat);
}

/**
 * A JSON Web Token where a client put one by mistake: as a session id (JoinSession's arguments swapped),
 * a hub method's name, a path segment. Lines quote those, and the service's tokens (and any other JWT: a
 * header of `{"`, Base64url `eyJ`) are credentials, which no line may carry; the line says a token was
 * there. Words are runs of Base64url characters and dots, so each is looked at once.
 */
const WORDS = /[\w.-]+/g;
const TOKEN_SHOWN = '[a token, not shown]';

function withoutTokens(msg: string): string {
  if (!msg.includes('eyJ')) return msg;
  return msg.replace(WORDS, hideToken);
}

/**
 * A word that is a token (three dot-separated Base64url parts, the first a JSON object's, the second not
 * empty; the third is, unsigned) as TOKEN_SHOWN, dots after it (the end of a sentence) kept.
 */
function hideToken(word: string): string {
  if (!word.startsWith('eyJ')) return word;
  const parts = word.split('.');
  if (parts.length < 3 || parts[1] === '' || parts.slice(3).some((p) => p !== '')) return word;
  return TOKEN_SHOWN + '.'.repeat(parts.length - 3);
}

/** What a line's text is made of `msg`: one line, visible, bounded, no token. */
const lineText = (msg: string): string => oneLine(withoutTokens(msg));

/** A run of characters written as they are: none hidden, no surrogate (a pair is taken whole below). */
const PLAIN_RUN = new RegExp(`[^${CONTROL_CHARACTERS}${BIDI_CONTROLS}\\ud800-\\udfff]+`, 'y');

/** `flat` (line ends already spaces) escaped up to MAX_LINE_TEXT, never ending inside an escape or a surrogate pair. */
function cut(flat: string): string {
  const note = (left: number): string => `... (${left} more characters)`;
  const room = MAX_LINE_TEXT - note(flat.length).length;
  // Escapes only lengthen: no more than `room` characters of the text can be shown.
  const head = flat.slice(0, room + 1);
  let out = '';
  let i = 0;
  while (i < head.length && out.length < room) {
    PLAIN_RUN.lastIndex = i;
    const run = PLAIN_RUN.exec(head)?.[0];
    if (run) {
      const taken = run.slice(0, room - out.length);
      out += taken;
      i += taken.length;
      continue;
    }
    const char = String.fromCodePoint(head.codePointAt(i)!);
    const shown = char.replace(HIDDEN, escapeHidden);
    if (out.length + shown.length > room) break;
    out += shown;
    i += char.length;
  }
  return out + note(flat.length - i);
}

/**
 * Whether stderr goes to the journal, which then reads a `<N>` priority at the start of each line.
 * systemd sets JOURNAL_STREAM to the device and inode of the stream it connects (systemd.exec(5)), and
 * children inherit the variable wherever their stderr goes: a command run from a unit's script into a
 * file or a pipe, by apt from apt-daily-upgrade.service, or in a terminal of a desktop session. So
 * the stream is compared, as systemd asks, not the variable's presence.
 */
export function underJournald(env: NodeJS.ProcessEnv = process.env, fd = 2): boolean {
  const stream = /^(\d+):(\d+)$/.exec(env.JOURNAL_STREAM ?? '');
  if (!stream) return false;
  try {
    const st = fstatSync(fd, { bigint: true });
    return st.dev === BigInt(stream[1]!) && st.ino === BigInt(stream[2]!);
  } catch {
    return false;
  }
}

/** underJournald for this process: its stderr stays where it is. */
let ownStderrJournald: boolean | undefined;
const stderrIsJournal = (): boolean => (ownStderrJournald ??= underJournald());

/** The syslog priority prefix of a line at `level`: empty unless stderr goes to the journal. */
export const priorityPrefix = (level: LogLevelName, journald = stderrIsJournal()): string => (journald ? `<${SYSLOG[level]}>` : '');

/**
 * Text written to stderr outside a logger (a fatal start-up message, before or without one): each line
 * with the priority prefix, since the journal makes an entry of every line, and kept visible and
 * bounded as a logger's line is (oneLine): such text quotes what was typed and other processes'
 * command lines.
 */
export function withPriority(level: LogLevelName, text: string, journald = stderrIsJournal()): string {
  const prefix = priorityPrefix(level, journald);
  return text.split('\n').map((line) => prefix + lineText(line)).join('\n') + '\n';
}

/** A line as the log writes it: priority (under the journal), time (elsewhere), level, category, text. */
function formatLine(level: LogLevelName, category: string, text: string, journald: boolean, timestamps: boolean): string {
  const time = timestamps ? new Date().toISOString() + ' ' : '';
  return `${priorityPrefix(level, journald)}${time}${SHORT[level]}: ${category}: ${text}`;
}

/** The one bounded writer of this process's stderr (bounded-output.ts), shared by every logger writing there. */
let stderrOutput: BoundedOutput | undefined;
function stderrWriter(journald: boolean, timestamps: boolean): (line: string) => void {
  stderrOutput ??= new BoundedOutput(process.stderr, (count) => formatLine('Warning', 'App',
    `${count} log line(s) dropped: whatever reads stderr (the journal) took nothing while ${MAX_UNWRITTEN_LOG_BYTES} bytes of log waited`,
    journald, timestamps));
  const output = stderrOutput;
  return (line) => output.write(line);
}

export function createLogger(options: LogOptions, category = 'App'): Logger {
  const journald = options.journald ?? stderrIsJournal();
  const timestamps = options.timestamps ?? !journald;
  const write = options.write ?? stderrWriter(journald, timestamps);
  const min = ORDER[levelFor(options.levels, category)];
  const emit = (level: LogLevelName, msg: string): void => {
    if (ORDER[level] < min || level === 'None') return;
    write(formatLine(level, category, lineText(msg), journald, timestamps));
  };
  return {
    trace: (m) => emit('Trace', m),
    debug: (m) => emit('Debug', m),
    info: (m) => emit('Information', m),
    warn: (m) => emit('Warning', m),
    error: (m) => emit('Error', m),
    critical: (m) => emit('Critical', m),
    enabled: (level) => ORDER[level] >= min && level !== 'None',
    child: (name) => createLogger({ ...options, write, journald, timestamps }, name),
  };
}

/** A logger that drops everything, for unit tests of modules that take one. */
export const silentLogger: Logger = createLogger({ levels: { Default: 'None' }, write: () => {} });
