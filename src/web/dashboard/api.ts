/**
 * The parts of Parley's HTTP API the dashboard uses (API.md "Auth endpoints", "Agents", "Webhooks"), as the browser
 * sees them. The dashboard is its own island: it imports nothing from the server's code; its types come
 * from src/web/api-types.ts, generated from the OpenAPI document (`npm run gen:api`), so they cannot drift.
 */

import type { components } from '../api-types.js';

/** The API's named schemas (src/web/api-types.ts, generated from /v1/openapi.json by `npm run gen:api`). */
export type Schemas = components['schemas'];

export type Role = Schemas['Role'];

/** Every role, most powerful first. */
export const ROLES: readonly Role[] = ['owner', 'admin', 'operator'];

export type Organization = Schemas['UserOrganization'];
export type User = Schemas['User'];
/** The body of `POST /v1/auth/login` and `POST /v1/auth/refresh`. */
export type SessionBody = Schemas['Session'];
/** The body of `GET /v1/me`. */
export type MeBody = Schemas['Me'];
export type ApiKey = Schemas['ApiKey'];
/** A created or rotated key, with the secret that exists only in this response. */
export type IssuedApiKey = Schemas['ApiKeyWithSecret'];
export type Agent = Schemas['Agent'];
/** An agent as the list shows it (GET /v1/agents): no instructions, tools or safety settings. */
export type AgentSummary = Schemas['AgentSummary'];
export type Member = Schemas['Member'];
/** A webhook endpoint (API.md "Webhooks"); the secret is never in it, see IssuedWebhookEndpoint. */
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
/** Why an endpoint is disabled: its receiver answered 410 Gone, it failed for days, or a person turned it off. */
export type WebhookDisabledReason = NonNullable<WebhookEndpoint['disabled_reason']>;
/** A created endpoint, or one whose secret was rotated, with the `whsec_...` secret shown only in this response. */
export type IssuedWebhookEndpoint = Schemas['WebhookEndpointWithSecret'];
/** An event an endpoint can subscribe to (`GET /v1/webhooks/events`). */
export type WebhookEventInfo = Schemas['WebhookEventList']['data'][number];
/** One event sent (or being sent) to one endpoint. */
export type WebhookDelivery = Schemas['WebhookDelivery'];
/** What a receiver answered to one attempt: HTTP status (0 when no response came), first 4 KiB of the body, duration in ms. */
export type WebhookResponse = NonNullable<WebhookDelivery['last_response']>;
/** A delivery with every attempt, oldest first (`GET /v1/webhooks/{id}/deliveries/{delivery_id}`). */
export type WebhookDeliveryDetail = Schemas['WebhookDeliveryWithAttempts'];

/** A page of a list endpoint. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
}

/** A field the server refused, from `validation_failed`'s `errors` (`path` as `tools.0.url`). */
export interface FieldError {
  path: string;
  message: string;
}

/** A refused or failed request: the API's error code and message, or `network_error` when nothing answered. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly fields: readonly FieldError[] = []) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * The ApiError of an API error body (`{"error": {code, message, errors?}}`, API.md "Errors"), or of a
 * status alone when the body is something else (a proxy's error page).
 */
export function errorFromBody(status: number, statusText: string, body: unknown): ApiError {
  let code = 'http_error';
  let message = `The server answered ${status} ${statusText}.`.replace(' .', '.');
  let fields: FieldError[] = [];
  const error = (body as { error?: { code?: unknown; message?: unknown; errors?: unknown } } | null)?.error;
  if (typeof error?.code === 'string') code = error.code;
  if (typeof error?.message === 'string' && error.message !== '') message = error.message;
  if (Array.isArray(error?.errors)) {
    fields = error.errors.filter((e): e is FieldError => typeof e?.path === 'string' && typeof e?.message === 'string');
  }
  return new ApiError(status, code, message, fields);
}

/** The ApiError of a non-2xx response, from the API's error body. */
export async function errorOf(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not the API's JSON: keep the status line.
  }
  return errorFromBody(res.status, res.statusText, body);
}

/** `fetch` that turns a network failure into ApiError `network_error` (status 0). */
export async function send(path: string | Request, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(path, { ...init, credentials: 'omit', cache: 'no-store' });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
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
