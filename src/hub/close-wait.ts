// How long uWS waits for a client's answer to our close frame, and the idleTimeout that sets it.
//
// After `ws.end()` uWS sends the close frame and FIN, then waits for the client's FIN with a timer of
// its "ping timeout" margin, derived from idleTimeout: 4 s below an idleTimeout of 16, 8 s below 32,
// 16 s from 32 up. uWS sweeps its timers every 4 s and a timer of n seconds fires at the (n/4)th sweep
// from now: a 4-s timer at the next one, anywhere from 0 to 4 s after the close. When it fires, uWS
// closes the socket; if the client is still sending (a device mid-stream, a client flushing what it
// queued), the kernel answers its next bytes with a reset, and a reset makes the client drop what it
// had received but not yet read: the Close message with its reason and the close frame. The client
// then sees 1006 instead of 1000 and the reason. Seen here about once in 150 closes of a client that
// was still sending its queued frames when the server closed it (a tcpdump showed the service's Close
// message, close frame and FIN, then its reset 10 ms later as the client's next frame arrived).
//
// So idleTimeout is set, not left off: at 960 s (uWS's largest) the wait is 12 to 16 s. The inactivity
// close it also turns on never comes first for a client that pings, because Hub.ClientTimeout closes
// a silent one sooner: the idle timer only restarts on what the client sends, as ClientTimeout's does.
// A client that never pings has no client timeout (ASP.NET Core starts it at the first ping), and uWS
// ends its socket after 960 s without a byte from it, as a dropped one (uWS 20.30 cannot count our
// pings as activity). A ClientTimeout over 940 s would have uWS close a silent connection that SignalR
// keeps, so then idleTimeout stays off and the wait is uWS's shortest, 0 to 4 s.

/** uWS refuses a larger idleTimeout (its timers count 240 sweeps of 4 s). */
export const UWS_MAX_IDLE_TIMEOUT_S = 960;

/**
 * Between Hub.ClientTimeout and uWS's idle close: the hub's timer (it ticks at least every second),
 * uWS's sweep (its idle close can come 4 s early), and room for a busy event loop.
 */
const IDLE_MARGIN_S = 20;

/**
 * The idleTimeout (seconds) for hub sockets: the largest uWS takes, for the longest close wait, unless
 * uWS could then close a silent connection before Hub.ClientTimeout does.
 */
export function hubIdleTimeoutSeconds(clientTimeoutMs: number): number {
  return clientTimeoutMs / 1000 + IDLE_MARGIN_S <= UWS_MAX_IDLE_TIMEOUT_S ? UWS_MAX_IDLE_TIMEOUT_S : 0;
}
