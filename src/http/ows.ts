// Optional whitespace (RFC 9110 section 5.6.3: SP and HTAB) around a header field value is not part of
// it, and uWS passes it through.
import { stripEnds } from '../trim.js';

/** The value without the SP and HTAB at its start and end. */
export const trimOws = (value: string): string => stripEnds(value, ' \t');
