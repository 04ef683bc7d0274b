// What the hub's own path answers to a request that is no WebSocket upgrade, as ASP.NET Core's
// connection dispatcher answers it (text/plain): there GET is long polling (Server-Sent Events with
// `Accept: text/event-stream`), POST sends to a long-polling connection and DELETE ends one. Each first
// needs the `id` of a connection; this hub has only the WebSocket transport, so a known id gets the
// dispatcher's answer for a transport the endpoint does not offer.

export interface PlainAnswer {
  readonly status: number;
  /** Empty for none. */
  readonly text: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** What ASP.NET's dispatcher puts on a long-polling GET's answer before it looks at the id. */
const NO_CACHE = { 'Cache-Control': 'no-cache, no-store', Pragma: 'no-cache', Expires: 'Thu, 01 Jan 1970 00:00:00 GMT' };

/**
 * What a 405 here lists in `Allow`, which RFC 9110 section 15.5.6 requires of every 405 (ASP.NET's
 * dispatcher sends none): the methods the path answers, and for a WebSocket connection's id only the GET
 * that opens its socket, as the dispatcher refuses that id to POST and DELETE.
 */
const PATH_METHODS = 'DELETE, GET, POST';
const WEBSOCKET_ID_METHODS = 'GET';

/**
 * `id`: the query's `id`, null when absent or empty; `known`: a negotiation or connection has it;
 * `accept`: the Accept header.
 */
export function plainHubAnswer(method: string, id: string | null, known: boolean, accept: string): PlainAnswer {
  const eventStream = accept.split(',').some((range) => range.split(';')[0]!.trim().toLowerCase() === 'text/event-stream');
  const headers = method === 'GET' && !eventStream ? NO_CACHE : {};
  const answer = (status: number, text: string, allow?: string): PlainAnswer => ({ status, text, headers: allow ? { ...headers, Allow: allow } : headers });
  if (method !== 'GET' && method !== 'POST' && method !== 'DELETE') return answer(405, '', PATH_METHODS);
  if (id === null) return answer(400, 'Connection ID required');
  if (!known) return answer(404, 'No Connection with that ID');
  if (method === 'POST') return answer(405, 'POST requests are not allowed for WebSocket connections.', WEBSOCKET_ID_METHODS);
  if (method === 'DELETE') return answer(400, 'Cannot terminate this connection using the DELETE endpoint.');
  return answer(404, `${eventStream ? 'ServerSentEvents' : 'LongPolling'} transport not supported by this end point type`);
}
