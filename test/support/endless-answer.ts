// A hostile HTTP answer for the command-line tools' bounded reads: 200 and JSON's white space for as long
// as the client reads (up to 512 MiB), with what was written and whether the client hung up.
import type { ServerResponse } from 'node:http';

/** Stop here: a client that reads without a bound would otherwise take the test machine's memory. */
const SERVER_LIMIT = 512 * 1024 * 1024;

export interface EndlessAnswer {
  /** Answers one request with the endless body. */
  readonly answer: (res: ServerResponse) => void;
  readonly written: () => number;
  readonly closed: () => boolean;
}

export function endlessAnswer(): EndlessAnswer {
  let written = 0;
  let closed = false;
  const answer = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const more = (): void => {
      while (!closed && written < SERVER_LIMIT && res.write(chunk)) written += chunk.length;
    };
    res.on('drain', more);
    res.on('close', () => { closed = true; });
    more();
  };
  return { answer, written: () => written, closed: () => closed };
}
