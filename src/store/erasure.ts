/**
 * What an erasure (ConversationsPort.erase; API.md "Conversations and handoff": DELETE) leaves of a stored
 * webhook event, the same on every store adapter.
 */
import { ERASED_MARKER } from './records.js';

/**
 * The fields of a webhook event's `data` that an erasure keeps: identifiers and what describes without
 * telling (roles, statuses, times, tool names, kinds, numbers of usage). Every other field can hold what a
 * visitor, an operator, the agent or a tool wrote, and becomes ERASED_MARKER (ConversationsPort.erase).
 */
const KEPT_EVENT_FIELDS: ReadonlySet<string> = new Set([
  'role', 'status', 'created_at', 'name', 'kind', 'http_status', 'duration_ms', 'is_error', 'requested_by', 'finish_reason',
  'metric', 'value', 'period', 'period_start', 'total',
]);

/** An event's `data` with its text replaced (see KEPT_EVENT_FIELDS); null values stay null. */
export function scrubEventData(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) out[k] = v === null || k.endsWith('_id') || KEPT_EVENT_FIELDS.has(k) ? v : ERASED_MARKER;
  return out;
}
