/**
 * The error code catalogue: every `code` the API can return, with its `type` and HTTP status.
 * Source: ../shared/API.md "Errors" (types, statuses and the minimum codes). README.md lists the
 * same table; test/unit/error-catalogue.test.ts keeps the two in sync.
 */
export const ERROR_CATALOGUE = {
  invalid_json: { type: 'invalid_request_error', status: 400 },
  validation_failed: { type: 'invalid_request_error', status: 400 },
  missing_org_id: { type: 'invalid_request_error', status: 400 },
  malformed_request: { type: 'invalid_request_error', status: 400 },
  unknown_provider: { type: 'invalid_request_error', status: 400 },
  missing_credentials: { type: 'authentication_error', status: 401 },
  invalid_api_key: { type: 'authentication_error', status: 401 },
  revoked_api_key: { type: 'authentication_error', status: 401 },
  invalid_token: { type: 'authentication_error', status: 401 },
  expired_token: { type: 'authentication_error', status: 401 },
  invalid_refresh_token: { type: 'authentication_error', status: 401 },
  /** Login: one code for an unknown e-mail and a wrong password (API.md "Credentials"). */
  invalid_credentials: { type: 'authentication_error', status: 401 },
  not_a_member: { type: 'permission_error', status: 403 },
  forbidden: { type: 'permission_error', status: 403 },
  /** A public endpoint or socket called from a page whose Origin the published agent does not allow. */
  origin_not_allowed: { type: 'permission_error', status: 403 },
  not_found: { type: 'not_found_error', status: 404 },
  /** The OpenAI-compatible endpoints: `model` names no agent of the organization (by id or exact name). */
  model_not_found: { type: 'not_found_error', status: 404 },
  method_not_allowed: { type: 'invalid_request_error', status: 405 },
  conversation_closed: { type: 'conflict_error', status: 409 },
  turn_in_progress: { type: 'conflict_error', status: 409 },
  /** An organization keeps at least one owner: its last owner cannot be removed or demoted. */
  last_owner: { type: 'conflict_error', status: 409 },
  /** POST /v1/members for a person who is already a member. */
  already_member: { type: 'conflict_error', status: 409 },
  /** POST /v1/webhooks/{endpoint_id}/deliveries/{delivery_id}/retry while an attempt of it runs. */
  delivery_in_progress: { type: 'conflict_error', status: 409 },
  body_too_large: { type: 'payload_too_large_error', status: 413 },
  unsupported_content_type: { type: 'unsupported_media_type_error', status: 415 },
  rate_limited: { type: 'rate_limit_error', status: 429 },
  model_unavailable: { type: 'upstream_error', status: 502 },
  model_timeout: { type: 'upstream_error', status: 504 },
  internal_error: { type: 'api_error', status: 500 },
  /** Only on stored messages and stream errors: the server stopped (crash, kill) during the turn. */
  interrupted: { type: 'api_error', status: 500 },
  shutting_down: { type: 'api_error', status: 503 },
  /** Admission control refused a new turn (with Retry-After). */
  overloaded: { type: 'api_error', status: 503 },
} as const satisfies Record<string, { type: string; status: number }>;

/** A stable error code, e.g. `invalid_api_key`. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;
/** An error type, e.g. `authentication_error`. */
export type ErrorType = (typeof ERROR_CATALOGUE)[ErrorCode]['type'];
