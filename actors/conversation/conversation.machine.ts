import { and, assign, fromCallback, sendTo, setup } from 'xstate';
import type { TurnCommand, TurnInput, TurnOutput } from '../turn/turn.types.js';
import type { ConversationContext, ConversationEvent, ConversationInput } from './conversation.types.js';

const FAILED_TO_START = { type: 'api_error', code: 'internal_error', message: 'The turn could not start.' } as const;

/**
 * The conversation machine: who answers (the agent while `active`) and the turn queue. A visitor message
 * queues its turn (`turn.requested`); turns run one at a time, in arrival order, each as one invoked
 * `turn` actor that gets the runtime's turn object as input and reports `turn.ended` when it is over.
 * When nothing is queued or running for `idleMs`, the machine reaches the final state `unloaded` and the
 * supervisor drops it (rehydrated from the store on the next event). A closed conversation takes no
 * turns (the caller answers 409 conversation_closed).
 *
 * Cost matters here (one actor per conversation, one per turn): no eventless transitions outside the
 * one-time `boot` state, and the next turn starts in the same transition that ends the previous one.
 *
 * The `turn` logic is registered here by key and provided by the runtime (src/runtime/turn/turn-runner.ts);
 * DESIGN.md "Actors": children are never spawned inline.
 */
export const conversationMachine = setup({
  types: {
    context: {} as ConversationContext,
    input: {} as ConversationInput,
    events: {} as ConversationEvent,
  },
  actors: {
    turn: fromCallback<TurnCommand, TurnInput>(() => {
      throw new Error('conversation actor "turn" not provided');
    }),
  },
  delays: {
    idleTimeout: ({ context }) => context.idleMs,
  },
  guards: {
    hasRoom: ({ context }) => context.queue.length < context.maxQueued,
    hasQueued: ({ context }) => context.queue.length > 0,
    isClosed: ({ context }) => context.status === 'closed',
    endsActive: ({ context, event }) => event.type === 'turn.ended' && event.output.turnId === context.active?.id,
    cancelsActive: ({ context, event }) =>
      event.type === 'turn.cancel' && (event.turnId === undefined || event.turnId === context.active?.id),
  },
  actions: {
    start: assign({
      active: ({ event }) => (event as { turn: ConversationContext['active'] }).turn,
    }),
    enqueue: assign({
      queue: ({ context, event }) => (event.type === 'turn.requested' ? [...context.queue, event.turn] : context.queue),
    }),
    withdraw: assign({
      queue: ({ context, event }) =>
        event.type === 'turn.withdrawn' ? context.queue.filter((t) => t.id !== event.turnId) : context.queue,
    }),
    finish: assign({
      active: null,
      lastTurn: ({ event }) => (event.type === 'turn.ended' ? event.output : null),
    }),
    finishAndStartNext: assign({
      active: ({ context }) => context.queue[0]!,
      queue: ({ context }) => context.queue.slice(1),
      lastTurn: ({ event }) => (event.type === 'turn.ended' ? event.output : null),
    }),
    startNext: assign({
      active: ({ context }) => context.queue[0]!,
      queue: ({ context }) => context.queue.slice(1),
    }),
    failToStart: assign({
      active: null,
      lastTurn: ({ context }): TurnOutput => ({ turnId: context.active?.id ?? '', outcome: 'failed', error: FAILED_TO_START }),
    }),
  },
}).createMachine({
  id: 'conversation',
  context: ({ input }) => ({
    conversationId: input.conversationId,
    status: input.status,
    maxQueued: input.maxQueued,
    idleMs: input.idleMs,
    maxSteps: input.maxSteps,
    queue: [],
    active: null,
    lastTurn: null,
  }),
  initial: 'boot',
  states: {
    boot: {
      always: [{ guard: 'isClosed', target: 'closed' }, { target: 'idle' }],
    },
    idle: {
      after: { idleTimeout: 'unloaded' },
      on: {
        // Only an empty queue is idle: the first message starts at once.
        'turn.requested': { target: 'answering', actions: 'start' },
        'conversation.close': { target: 'closed', actions: assign({ status: 'closed' }) },
      },
    },
    answering: {
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({ turn: context.active!, maxSteps: context.maxSteps }),
        // A turn actor that throws as it starts still frees the conversation (it never sends turn.ended).
        onError: [
          { guard: 'hasQueued', target: 'answering', reenter: true, actions: ['failToStart', 'startNext'] },
          { target: 'idle', actions: 'failToStart' },
        ],
      },
      on: {
        // The next queued turn starts in the same transition that ends this one.
        'turn.ended': [
          { guard: and(['endsActive', 'hasQueued']), target: 'answering', reenter: true, actions: 'finishAndStartNext' },
          { guard: 'endsActive', target: 'idle', actions: 'finish' },
        ],
        'turn.requested': { guard: 'hasRoom', actions: 'enqueue' },
        'turn.withdrawn': { actions: 'withdraw' },
        'turn.cancel': { guard: 'cancelsActive', actions: sendTo('turn', { type: 'cancel' }) },
      },
    },
    // A closed conversation takes no turns; it still unloads when idle like any other.
    closed: { after: { idleTimeout: 'unloaded' } },
    unloaded: { type: 'final' },
  },
});
