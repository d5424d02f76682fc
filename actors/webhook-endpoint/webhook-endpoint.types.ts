/**
 * Types of the webhook-endpoint machine: one actor per webhook endpoint, governing its deliveries
 * (API.md "Webhooks"). The machine decides; the runtime's `pump` callback does the I/O (claiming due
 * deliveries, sending them, recording attempts) and reports back.
 */

export interface WebhookEndpointInput {
  endpointId: string;
  /** Attempts in flight at once for this endpoint (>= 1). */
  maxInFlight: number;
  /** An endpoint failing this long without a success is disabled, ms (API.md: 5 days). */
  disableAfterMs: number;
  /** The stored state: disabled endpoints start disabled. */
  disabled: boolean;
  /** Epoch ms of the first failure of the current failing streak, from the store; null when not failing. */
  failingSince: number | null;
}

export interface WebhookEndpointContext {
  endpointId: string;
  maxInFlight: number;
  disableAfterMs: number;
  failingSince: number | null;
  /** While backing off: how long until the earliest waiting delivery is due, ms (null otherwise). */
  nextDueInMs: number | null;
  /** Why the endpoint was disabled, when it is. */
  disabledReason: 'gone' | 'failing' | 'manual' | null;
}

/** How one attempt ended. `gone`: the receiver answered 410 Gone (API.md: disables the endpoint at once). */
export type AttemptOutcome = 'succeeded' | 'failed' | 'gone';

export type WebhookEndpointEvent =
  /** New deliveries may be due (an event was recorded, a retry was asked for, or the sweep found some). */
  | { type: 'wake' }
  /** An attempt ended at `at` (epoch ms). */
  | { type: 'attempt.finished'; outcome: AttemptOutcome; at: number }
  /** Nothing more is due now; `nextDueInMs` is how long until the next waiting delivery is due, ms, or null. */
  | { type: 'drained'; nextDueInMs: number | null }
  | { type: 'enable' }
  | { type: 'disable' };

/** The pump's input: which endpoint, and how many attempts may be in flight. */
export interface PumpInput {
  endpointId: string;
  maxInFlight: number;
}
