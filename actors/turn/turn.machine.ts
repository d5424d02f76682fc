import { assign, fromCallback, sendTo, setup } from 'xstate';
import type { TurnContext, TurnEvent, TurnInput, TurnOutput, TurnRunInput } from './turn.types.js';

/** Events the `run` callback accepts from the machine. */
export type TurnRunCommand = { type: 'cancel' };

/**
 * The turn machine: one agent reply, `preparing` (history + retrieval) -> `generating` (the model call)
 * <-> `runningTools` (the tool loop) -> `finishing` (safety check on the finished text, SPEC.md 6.1
 * rule 2, then the reply is stored) -> `succeeded`; any failure -> `failed`. A `cancel` is passed to
 * the running work, which keeps what was said and finishes with reason `cancelled`.
 *
 * The work is one invoked callback, `run`, provided by the runtime (src/runtime/turn/turn-runner.ts):
 * plain async code over the turn object it gets as input, reporting its lifecycle back as events. The
 * machine holds no I/O and sees no tokens. The tool-loop bound is decided by actors/turn/turn.rules.ts.
 */
export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    input: {} as TurnInput,
    events: {} as TurnEvent,
    output: {} as TurnOutput,
  },
  actors: {
    run: fromCallback<TurnRunCommand, TurnRunInput>(() => {
      throw new Error('turn actor "run" not provided');
    }),
  },
}).createMachine({
  id: 'turn',
  context: ({ input }) => ({ turn: input.turn, maxSteps: input.maxSteps, step: 0, finishReason: null, error: null }),
  initial: 'running',
  states: {
    running: {
      invoke: {
        id: 'run',
        src: 'run',
        input: ({ context }) => ({ turn: context.turn, maxSteps: context.maxSteps }),
        // A runner that throws synchronously fails the turn instead of crashing the conversation.
        onError: {
          target: 'failed',
          actions: assign({ error: { type: 'api_error', code: 'internal_error', message: 'The turn failed.' } }),
        },
      },
      initial: 'preparing',
      states: {
        preparing: {
          on: {
            'turn.generating': { target: 'generating', actions: assign({ step: ({ event }) => event.step }) },
            // Cancelled before the model was called.
            'turn.finishing': 'finishing',
          },
        },
        generating: {
          on: {
            'turn.tools': 'runningTools',
            'turn.finishing': 'finishing',
          },
        },
        runningTools: {
          on: {
            'turn.generating': { target: 'generating', actions: assign({ step: ({ event }) => event.step }) },
            // Cancelled while tools ran.
            'turn.finishing': 'finishing',
          },
        },
        finishing: {},
      },
      on: {
        cancel: { actions: sendTo('run', { type: 'cancel' }) },
        'turn.succeeded': { target: 'succeeded', actions: assign({ finishReason: ({ event }) => event.finishReason }) },
        'turn.failed': { target: 'failed', actions: assign({ error: ({ event }) => event.error }) },
      },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
  },
  output: ({ context }): TurnOutput =>
    context.error === null
      ? { turnId: context.turn.id, outcome: 'succeeded', finishReason: context.finishReason ?? 'stop' }
      : { turnId: context.turn.id, outcome: 'failed', error: context.error },
});
