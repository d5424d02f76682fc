/**
 * The parts of Parley's HTTP API the dashboard uses (API.md "Auth endpoints", "Agents"), as the browser
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
