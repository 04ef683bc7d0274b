// The characters a line a person reads must not carry as they are, listed once for the three places
// that show what others sent: log lines (logger.ts), quoted configuration values (config/shown.ts) and
// the health command's table of another service's answer (cli/health.ts). Each is a character class's
// body or a pattern's source, for the patterns those build.

/** C0 controls, DEL and C1 controls: terminal escape sequences, NUL, backspace, line ends. */
export const CONTROL_CHARACTERS = '\\x00-\\x1f\\x7f-\\x9f';

/** The line and paragraph separators, which some readers take for line ends. */
export const UNICODE_LINE_BREAKS = '\\u2028\\u2029';

/**
 * Unicode's Bidi_Control marks, which reorder or hide text on a screen: the embeddings and overrides,
 * the isolates, U+200E/F and the Arabic letter mark U+061C (a test checks the list against the
 * property).
 */
export const BIDI_CONTROLS = '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';

/** A UTF-16 surrogate without its other half: it has no UTF-8 form and is written as U+FFFD, hiding what came. */
export const LONE_SURROGATE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';

/** Everything of the above but the line breaks, which each place turns into spaces of its own. */
export const HIDDEN_CHARACTERS = `[${CONTROL_CHARACTERS}${BIDI_CONTROLS}]|${LONE_SURROGATE}`;

/** `\u202e`: a character as a JSON or JavaScript escape. */
export const unicodeEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

const HIDDEN_OR_LINE_BREAK = new RegExp(`${HIDDEN_CHARACTERS}|[${UNICODE_LINE_BREAKS}]`, 'g');

/**
 * `text` with every character above, line breaks included, as its escape: for words of another party's
 * choosing shown or passed on as one piece of text (a cell of the health command's table; an upstream
 * close reason in a session's end reason, which devices are sent and the database keeps: it reads a text
 * only up to a NUL).
 */
export const withHiddenEscaped = (text: string): string => text.replace(HIDDEN_OR_LINE_BREAK, unicodeEscape);
