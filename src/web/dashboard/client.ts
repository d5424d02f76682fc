/**
 * The dashboard's typed API client: openapi-fetch over the paths of src/web/api-types.ts (generated from
 * /v1/openapi.json by `npm run gen:api`), so a path, a parameter or a body field the API does not have is a
 * type error, not a 400 at run time.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '../api-types.js';
import { errorFromBody } from './api.js';

/** The client type: `api.GET('/v1/agents/{agent_id}', { params: { path: { agent_id } } })`. */
export type ApiClient = Client<paths>;

/** A client on this origin whose requests go through `fetch` (the session's, which adds the person's credentials). */
export function createApiClient(fetch: (request: Request) => Promise<Response>): ApiClient {
  return createClient<paths>({ baseUrl: location.origin, fetch });
}

/**
 * The data of an openapi-fetch call, or a thrown ApiError carrying the API's error code, message and
 * refused fields (`validation_failed`'s `errors`). A network failure arrives as ApiError `network_error`
 * from the session's fetch.
 */
export async function unwrap<D>(call: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw errorFromBody(response.status, response.statusText, error);
  return data as D;
}
