import { assign, sendTo, setup } from 'xstate';
import { turnMachine } from '../turn/turn.machine.js';
import type { TurnOutput } from '../turn/turn.types.js';
import type { ConversationContext, ConversationEvent, ConversationInput } from './conversation.types.js';

/**
 * The conversation machine: who answers (the agent while `active`) and the turn queue. A visitor message
 * queues its turn (`turn.requested`); turns run one at a time, in arrival order, as invoked `turn`
 * actors that get the runtime's turn object as input. When nothing is queued or running for `idleMs`,
 * it reaches the final state `unloaded` and the supervisor drops it (rehydrated from the store on the
 * next event). A closed conversation takes no turns (the caller answers 409 conversation_closed).
 *
 * The `turn` child logic is registered here by key and replaced by the runtime with a provided turn
 * machine (DESIGN.md "Actors": never spawned inline).
 */
export const conversationMachine = setup({
  types: {
    context: {} as ConversationContext,
    input: {} as ConversationInput,
    events: {} as ConversationEvent,
  },
  actors: { turn: turnMachine },
  delays: {
    idleTimeout: ({ context }) => context.idleMs,
  },
  guards: {
    hasRoom: ({ context }) => context.queue.length < context.maxQueued,
    hasQueued: ({ context }) => context.queue.length > 0,
    isClosed: ({ context }) => context.status === 'closed',
    cancelsActive: ({ context, event }) =>
      event.type === 'turn.cancel' && (event.turnId === undefined || event.turnId === context.active?.id),
  },
  actions: {
    enqueue: assign({
      queue: ({ context, event }) => (event.type === 'turn.requested' ? [...context.queue, event.turn] : context.queue),
    }),
    withdraw: assign({
      queue: ({ context, event }) =>
        event.type === 'turn.withdrawn' ? context.queue.filter((t) => t.id !== event.turnId) : context.queue,
    }),
    startHead: assign({
      active: ({ context }) => context.queue[0]!,
      queue: ({ context }) => context.queue.slice(1),
    }),
    finishActive: assign({
      active: null,
      lastTurn: ({ event }) => (event as unknown as { output?: TurnOutput }).output ?? null,
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
  initial: 'routing',
  states: {
    routing: {
      always: [
        { guard: 'isClosed', target: 'closed' },
        { guard: 'hasQueued', target: 'answering', actions: 'startHead' },
        { target: 'idle' },
      ],
    },
    idle: {
      after: { idleTimeout: 'unloaded' },
      on: {
        // Only an empty queue is idle, so there is always room for the first message.
        'turn.requested': { target: 'routing', actions: 'enqueue' },
        'conversation.close': { target: 'closed', actions: assign({ status: 'closed' }) },
      },
    },
    answering: {
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({ turn: context.active!, maxSteps: context.maxSteps }),
        onDone: { target: 'routing', actions: 'finishActive' },
        // A turn actor that fails still frees the conversation for the next message.
        onError: { target: 'routing', actions: 'finishActive' },
      },
      on: {
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
