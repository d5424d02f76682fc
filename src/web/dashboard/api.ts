/**
 * The parts of Parley's HTTP API the dashboard uses (API.md "Auth endpoints", "Agents", "Webhooks"), as the browser
 * sees them. The dashboard is its own island: it imports nothing from the server's code, so these shapes
 * are written here again from the API contract.
 */

export type Role = 'owner' | 'admin' | 'operator';

/** Every role, most powerful first. */
export const ROLES: readonly Role[] = ['owner', 'admin', 'operator'];

export interface Organization {
  id: string;
  name: string;
  role: Role;
}

export interface User {
  id: string;
  email: string;
}

/** The body of `POST /v1/auth/login` and `POST /v1/auth/refresh`. */
export interface SessionBody {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  user: User;
  organizations: Organization[];
}

/** The body of `GET /v1/me`. */
export interface MeBody {
  user: User;
  organizations: Organization[];
}

export interface ApiKey {
  id: string;
  name: string;
  last4: string;
  created_at: string;
  revoked_at: string | null;
  /** Set on a rotated key: when its grace period ends. */
  expires_at: string | null;
}

/** A created or rotated key, with the secret that exists only in this response. */
export interface IssuedApiKey extends ApiKey {
  secret: string;
}

export interface Agent {
  id: string;
  name: string;
  description: string;
  published: boolean;
  public_key: string | null;
  model: { provider: string; name: string };
  created_at: string;
}

export interface Member {
  user_id: string;
  email: string;
  role: Role;
  created_at: string;
}

/** Why an endpoint is disabled: its receiver answered 410 Gone, it failed for days, or a person turned it off. */
export type WebhookDisabledReason = 'gone' | 'failing' | 'manual';

/** A webhook endpoint (API.md "Webhooks"); the secret is never in it, see IssuedWebhookEndpoint. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  /** Event names, or `["*"]` for every event. */
  events: string[];
  status: 'enabled' | 'disabled';
  disabled_reason: WebhookDisabledReason | null;
  /** When its deliveries started failing without a success since; null while it is healthy. */
  failing_since: string | null;
  /** While in the future, the previous secret still signs beside the current one. */
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A created endpoint, or one whose secret was rotated, with the `whsec_...` secret shown only in this response. */
export interface IssuedWebhookEndpoint extends WebhookEndpoint {
  secret: string;
}

/** An event an endpoint can subscribe to (`GET /v1/webhooks/events`). */
export interface WebhookEventInfo {
  name: string;
  description: string;
}

/** What a receiver answered to one attempt: HTTP status (0 when no response came), first 4 KiB of the body, duration in ms. */
export interface WebhookResponse {
  status: number;
  body: string;
  duration_ms: number;
}

/** One event sent (or being sent) to one endpoint. */
export interface WebhookDelivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  last_response: WebhookResponse | null;
  last_error: string | null;
  created_at: string;
}

/** A delivery with every attempt, oldest first (`GET /v1/webhooks/{id}/deliveries/{delivery_id}`). */
export interface WebhookDeliveryDetail extends WebhookDelivery {
  attempts: Array<WebhookResponse & { number: number; error: string | null; at: string }>;
}

/** A page of a list endpoint. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
}

/** A refused or failed request: the API's error code and message, or `network_error` when nothing answered. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The ApiError of a non-2xx response, from the API's error body (`{"error": {code, message}}`). */
export async function errorOf(res: Response): Promise<ApiError> {
  let code = 'http_error';
  let message = `The server answered ${res.status} ${res.statusText}.`.replace(' .', '.');
  try {
    const body = await res.json() as { error?: { code?: unknown; message?: unknown } };
    if (typeof body.error?.code === 'string') code = body.error.code;
    if (typeof body.error?.message === 'string' && body.error.message !== '') message = body.error.message;
  } catch {
    // Not the API's JSON (a proxy's error page): keep the status line.
  }
  return new ApiError(res.status, code, message);
}

/** `fetch` that turns a network failure into ApiError `network_error` (status 0). */
export async function send(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, { ...init, credentials: 'omit', cache: 'no-store' });
  } catch (err) {
    const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
    throw new ApiError(0, 'network_error', timedOut
      ? 'Parley did not answer in time. Try again.'
      : 'Could not reach Parley. Check your connection and try again.');
  }
}

/** A JSON request body with its content type. */
export function jsonBody(body: unknown): RequestInit {
  return { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } };
}

export type { Citation, Conversation, ConversationStatus, Frame, Message, MessageRole, ToolRun } from './messages.js';
