import { assign, fromPromise, setup } from 'xstate';
import type {
  FailInput, FinishInput, RunToolsInput, StepResult, TurnContext, TurnError, TurnEvent, TurnInput,
  TurnOutput, TurnStepInput,
} from './turn.types.js';

const notProvided = (name: string) => () => Promise.reject(new Error(`turn actor "${name}" not provided`));

/** Any thrown value as a TurnError: AppError-like objects keep their type/code/message. */
function toTurnError(err: unknown): TurnError {
  if (err && typeof err === 'object' && 'type' in err && 'code' in err && 'message' in err) {
    const e = err as { type: unknown; code: unknown; message: unknown };
    if (typeof e.type === 'string' && typeof e.code === 'string' && typeof e.message === 'string') {
      return { type: e.type, code: e.code, message: e.message };
    }
  }
  return { type: 'api_error', code: 'internal_error', message: 'The turn failed.' };
}

/**
 * The turn machine: prepare (history + retrieval) -> generate (tool loop, at most `maxSteps` model calls)
 * -> moderate (safety check on the finished text, SPEC.md 6.1 rule 2) -> persist -> succeeded; any
 * failure -> failing (the failed reply is persisted and an `error` event sent) -> failed. A `cancel`
 * while generating stops the model call and persists what was said with finish reason `cancelled`.
 *
 * All I/O is in the provided actors (`machine.provide({ actors })` in src/runtime/turn-actors.ts):
 * `prepare`, `generate` (streams tokens to the turn channel itself), `runTools`, `moderate`,
 * `persist`, `fail`. Each takes `{ turnId, ... }` and finds the turn's data by id.
 */
export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    input: {} as TurnInput,
    events: {} as TurnEvent,
    output: {} as TurnOutput,
  },
  actors: {
    prepare: fromPromise<void, TurnStepInput>(notProvided('prepare')),
    generate: fromPromise<StepResult, TurnStepInput>(notProvided('generate')),
    runTools: fromPromise<void, RunToolsInput>(notProvided('runTools')),
    moderate: fromPromise<{ blocked: boolean }, FinishInput>(notProvided('moderate')),
    persist: fromPromise<void, FinishInput>(notProvided('persist')),
    fail: fromPromise<void, FailInput>(notProvided('fail')),
  },
  guards: {
    wantsTools: ({ context, event }) => {
      const result = (event as unknown as { output: StepResult }).output;
      return result.finishReason === 'tool_calls' && result.toolCalls.length > 0 && context.step < context.maxSteps;
    },
  },
  actions: {
    recordError: assign({ error: ({ event }) => toTurnError((event as unknown as { error: unknown }).error) }),
  },
}).createMachine({
  id: 'turn',
  context: ({ input }) => ({
    turnId: input.turnId,
    conversationId: input.conversationId,
    maxSteps: input.maxSteps,
    step: 0,
    pendingToolCalls: [],
    finishReason: 'stop',
    error: null,
  }),
  initial: 'preparing',
  states: {
    preparing: {
      invoke: {
        src: 'prepare',
        input: ({ context }) => ({ turnId: context.turnId, step: 0 }),
        onDone: 'generating',
        onError: { target: 'failing', actions: 'recordError' },
      },
      on: { cancel: { target: 'moderating', actions: assign({ finishReason: 'cancelled' }) } },
    },
    generating: {
      entry: assign({ step: ({ context }) => context.step + 1 }),
      invoke: {
        src: 'generate',
        input: ({ context }) => ({ turnId: context.turnId, step: context.step }),
        onDone: [
          {
            guard: 'wantsTools',
            target: 'runningTools',
            actions: assign({ pendingToolCalls: ({ event }) => event.output.toolCalls }),
          },
          {
            target: 'moderating',
            actions: assign({
              // A model that still wants tools after the last allowed step ends the turn as `length`;
              // `tool_calls` with no calls at all is just the end of the answer.
              finishReason: ({ event }) =>
                event.output.finishReason !== 'tool_calls' ? event.output.finishReason
                  : event.output.toolCalls.length > 0 ? 'length' : 'stop',
            }),
          },
        ],
        onError: { target: 'failing', actions: 'recordError' },
      },
      on: { cancel: { target: 'moderating', actions: assign({ finishReason: 'cancelled' }) } },
    },
    runningTools: {
      invoke: {
        src: 'runTools',
        input: ({ context }) => ({ turnId: context.turnId, calls: context.pendingToolCalls }),
        onDone: { target: 'generating', actions: assign({ pendingToolCalls: [] }) },
        onError: { target: 'failing', actions: 'recordError' },
      },
      on: { cancel: { target: 'moderating', actions: assign({ finishReason: 'cancelled' }) } },
    },
    moderating: {
      invoke: {
        src: 'moderate',
        input: ({ context }) => ({ turnId: context.turnId, finishReason: context.finishReason }),
        onDone: {
          target: 'persisting',
          actions: assign({
            finishReason: ({ context, event }) => (event.output.blocked ? 'content_filter' : context.finishReason),
          }),
        },
        onError: { target: 'failing', actions: 'recordError' },
      },
    },
    persisting: {
      invoke: {
        src: 'persist',
        input: ({ context }) => ({ turnId: context.turnId, finishReason: context.finishReason }),
        onDone: 'succeeded',
        onError: { target: 'failing', actions: 'recordError' },
      },
    },
    failing: {
      invoke: {
        src: 'fail',
        input: ({ context }) => ({ turnId: context.turnId, error: context.error ?? toTurnError(undefined) }),
        onDone: 'failed',
        // Even when the failure record cannot be written, the turn ends: never loop.
        onError: 'failed',
      },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
  },
  output: ({ context }): TurnOutput =>
    context.error === null
      ? { turnId: context.turnId, outcome: 'succeeded', finishReason: context.finishReason }
      : { turnId: context.turnId, outcome: 'failed', error: context.error },
});
