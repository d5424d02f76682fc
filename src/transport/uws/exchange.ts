import type { HttpResponse } from 'uWebSockets.js';
import type { HttpRequest } from '../http/types.js';

/**
 * One request/response pair as the uWS transport tracks it between the synchronous uWS callback and
 * the async handler. uWS forbids touching `res` after the client went away (onAborted) or after the
 * response ended; `closed` records both, and every writer checks it first.
 */
export interface Exchange {
  res: HttpResponse;
  /** The client went away, or the response was ended: `res` must not be touched again. */
  closed: boolean;
  /** Called once when the client goes away while the response is still open (streams unsubscribe). */
  onAbort: (() => void) | undefined;
  /** `performance.now()` when the request arrived, ms. */
  startedAt: number;
  req: HttpRequest;
  /** A HEAD request: the response gets the headers a GET would get, and no body (RFC 9110 section 9.3.2). */
  head: boolean;
  /** Status written (0 until a response is started), for the log line and metrics. */
  status: number;
}
