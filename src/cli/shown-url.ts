// How the commands' messages show an address: scheme, host, port and path, as the voice server's address is
// shown everywhere (src/upstream/public-url.ts). A query is where an access token travels
// (`/health?access_token=...`, a hub URL's `id=` and `access_token=`), and user info is a password: neither is
// repeated on a terminal, in a script's log or in the journal. What a command prints passes through
// urlsShown, so an address quoted deep inside (a request that failed, the SignalR client's own words) is
// reduced as well as the one the command names itself.
import { publicServerUrl } from '../upstream/public-url.js';

/** `http://user:pw@host:5000/health?access_token=x` -> `http://host:5000/health`. */
export const shownUrl = (url: string | URL): string => publicServerUrl(String(url));

/**
 * Anything written `scheme://...` in `text`, reduced to what shownUrl keeps. Punctuation that ends it is
 * the sentence's (`GET http://host/x: HTTP 401`), kept after the address.
 */
export const urlsShown = (text: string): string =>
  text.replace(/\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s'"<>]*/gi, (match) => {
    let end = match.length;
    while (end > 0 && SENTENCE_MARKS.includes(match[end - 1]!)) end--;
    return shownUrl(match.slice(0, end)) + match.slice(end);
  });

const SENTENCE_MARKS = '.,;:!?)';
