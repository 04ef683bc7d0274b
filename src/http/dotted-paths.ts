// Routes for request paths with dot segments, beside uWS's own. Kestrel removes `.` and `..` before
// routing; uWS matches a path's segments as sent, and `/voice-hub/./negotiate` has more of them than
// the route it names, so no route of the hub's takes it and it reaches the HTTP API's route for every
// path. That route hands such a path to the routes added here first. Not a uWS route of their own: one
// more handler that every request passes through (and yields) cost 2.3 us per request, a fifth of bare
// uWS's whole answer; here the other paths pay one test of their text (mayHaveDotSegments).
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';

/** Answers the request and returns true when the path (as sent, dot segments and all) is its route's. */
export type DottedPathRoute = (res: HttpResponse, req: HttpRequest) => boolean;

const routes = new WeakMap<TemplatedApp, DottedPathRoute[]>();

export function addDottedPathRoute(app: TemplatedApp, route: DottedPathRoute): void {
  const list = routes.get(app);
  if (list) list.push(route);
  else routes.set(app, [route]);
}

/** Whether a route added for `app` took the request. */
export function takenByDottedPathRoute(app: TemplatedApp, res: HttpResponse, req: HttpRequest): boolean {
  for (const route of routes.get(app) ?? []) if (route(res, req)) return true;
  return false;
}
