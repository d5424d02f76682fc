import { assign, fromCallback, setup } from 'xstate';
import type { PumpInput, WebhookEndpointContext, WebhookEndpointEvent, WebhookEndpointInput } from './webhook-endpoint.types.js';

/**
 * The webhook-endpoint machine (DESIGN.md "Actors"): one actor per endpoint.
 * - `idle`: nothing is due.
 * - `delivering`: the invoked `pump` claims due deliveries (at most `maxInFlight` attempts at once),
 *   sends them and reports each attempt's outcome, then `drained` with the next due time.
 * - `backingOff`: deliveries wait for their retry time (`nextDueInMs`, from the pump, which reads the
 *   due times from the store). Nothing is lost with a timer: due times live in the store, and a new
 *   actor (after a restart) starts by pumping, which finds them again.
 * - `disabled`: nothing is sent until `enable`. Entered on a 410 Gone, after `disableAfterMs` (5 days)
 *   of failures without a success, or by `disable`.
 * A success ends the failing streak (`failingSince` back to null).
 */
export const webhookEndpointMachine = setup({
  types: {
    context: {} as WebhookEndpointContext,
    input: {} as WebhookEndpointInput,
    events: {} as WebhookEndpointEvent,
  },
  actors: {
    pump: fromCallback<{ type: 'stop' }, PumpInput>(() => {
      throw new Error('webhook endpoint actor "pump" not provided');
    }),
  },
  delays: {
    untilDue: ({ context }) => Math.max(0, context.nextDueInMs ?? 0),
  },
  guards: {
    startsDisabled: ({ context }) => context.disabledReason !== null,
    gone: ({ event }) => event.type === 'attempt.finished' && event.outcome === 'gone',
    failingTooLong: ({ context, event }) =>
      event.type === 'attempt.finished' && event.outcome === 'failed'
      && (event.at - (context.failingSince ?? event.at)) >= context.disableAfterMs,
    nothingWaits: ({ event }) => event.type === 'drained' && event.nextDueInMs === null,
  },
  actions: {
    record: assign({
      failingSince: ({ context, event }) => {
        if (event.type !== 'attempt.finished') return context.failingSince;
        if (event.outcome === 'succeeded') return null;
        return context.failingSince ?? event.at;
      },
    }),
  },
}).createMachine({
  id: 'webhookEndpoint',
  context: ({ input }) => ({
    endpointId: input.endpointId,
    maxInFlight: input.maxInFlight,
    disableAfterMs: input.disableAfterMs,
    failingSince: input.failingSince,
    nextDueInMs: null,
    disabledReason: input.disabled ? 'manual' : null,
  }),
  initial: 'boot',
  states: {
    boot: { always: [{ guard: 'startsDisabled', target: 'disabled' }, { target: 'delivering' }] },
    idle: {
      on: {
        wake: 'delivering',
        disable: { target: 'disabled', actions: assign({ disabledReason: 'manual' }) },
      },
    },
    delivering: {
      invoke: { id: 'pump', src: 'pump', input: ({ context }) => ({ endpointId: context.endpointId, maxInFlight: context.maxInFlight }) },
      on: {
        'attempt.finished': [
          { guard: 'gone', target: 'disabled', actions: ['record', assign({ disabledReason: 'gone' })] },
          { guard: 'failingTooLong', target: 'disabled', actions: ['record', assign({ disabledReason: 'failing' })] },
          { actions: 'record' },
        ],
        drained: [
          { guard: 'nothingWaits', target: 'idle', actions: assign({ nextDueInMs: null }) },
          { target: 'backingOff', actions: assign({ nextDueInMs: ({ event }) => (event.type === 'drained' ? event.nextDueInMs : null) }) },
        ],
        disable: { target: 'disabled', actions: assign({ disabledReason: 'manual' }) },
      },
    },
    backingOff: {
      after: { untilDue: 'delivering' },
      on: {
        wake: 'delivering',
        disable: { target: 'disabled', actions: assign({ disabledReason: 'manual' }) },
      },
    },
    disabled: {
      on: {
        enable: { target: 'delivering', actions: assign({ disabledReason: null, failingSince: null }) },
      },
    },
  },
});
