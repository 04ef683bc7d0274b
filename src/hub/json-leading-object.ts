// ASP.NET Core reads a JSON hub message, and the handshake request, with a Utf8JsonReader that stops at
// the end of the first object: whatever follows it in the record (a NUL a C client counted in, a second
// object) is never read. JSON.parse takes the whole text, so when it refuses a record, the object the
// record starts with is looked for and read on its own.
import { endOfJsonValue, skipJsonSpace } from './json-members.js';

/** JSON.parse of the record, or of the object it starts with when what follows that object is what JSON.parse refused. */
export function parseLeadingObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    // Where the object the record starts with ends, by its brackets outside strings; whether it is
    // well-formed is JSON.parse's to say. One that does not end before the record does is the error.
    const start = skipJsonSpace(text, 0);
    if (text.charCodeAt(start) !== 0x7b) throw e;
    const end = endOfJsonValue(text, start);
    if (end >= text.length) throw e;
    try {
      return JSON.parse(text.slice(0, end));
    } catch {
      throw e;
    }
  }
}
