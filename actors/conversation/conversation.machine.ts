import { assign, sendTo, setup } from 'xstate';
import { turnMachine } from '../turn/turn.machine.js';
import type { TurnOutput } from '../turn/turn.types.js';
import type { ConversationContext, ConversationEvent, ConversationInput, QueuedTurn } from './conversation.types.js';

/**
 * The conversation machine: who answers (the agent while `active`) and the turn queue. Visitor messages
 * reserve a place (`turn.requested`), become runnable once persisted (`turn.accepted`), and run one at
 * a time in arrival order as invoked `turn` actors. When nothing is queued or running for `idleMs`, it
 * reaches the final state `unloaded` and the supervisor drops it (rehydrated from the store on the next
 * event). A closed conversation takes no turns (the caller answers 409 conversation_closed).
 *
 * The `turn` child logic is registered here and replaced by the runtime with a provided turn machine.
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
    // While the head is still being persisted it is not running yet, so it does not count as queued.
    hasRoomBehindHead: ({ context }) => context.queue.length <= context.maxQueued,
    headReady: ({ context }) => context.queue[0]?.ready === true,
    queueEmpty: ({ context }) => context.queue.length === 0,
    isClosed: ({ context }) => context.status === 'closed',
    isActive: ({ context, event }) => event.type === 'turn.withdrawn' && event.turnId === context.activeTurnId,
  },
  actions: {
    enqueue: assign({
      queue: ({ context, event }) =>
        event.type === 'turn.requested' ? [...context.queue, { turnId: event.turnId, ready: false }] : context.queue,
    }),
    markReady: assign({
      queue: ({ context, event }) =>
        event.type === 'turn.accepted'
          ? context.queue.map((t): QueuedTurn => (t.turnId === event.turnId ? { ...t, ready: true } : t))
          : context.queue,
    }),
    withdraw: assign({
      queue: ({ context, event }) =>
        event.type === 'turn.withdrawn' ? context.queue.filter((t) => t.turnId !== event.turnId) : context.queue,
    }),
    startHead: assign({
      activeTurnId: ({ context }) => context.queue[0]!.turnId,
      queue: ({ context }) => context.queue.slice(1),
    }),
    finishActive: assign({
      activeTurnId: null,
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
    activeTurnId: null,
    lastTurn: null,
  }),
  initial: 'routing',
  states: {
    routing: {
      always: [
        { guard: 'isClosed', target: 'closed' },
        { guard: 'headReady', target: 'answering', actions: 'startHead' },
        { guard: 'queueEmpty', target: 'idle' },
        { target: 'waiting' },
      ],
    },
    idle: {
      after: { idleTimeout: 'unloaded' },
      on: {
        // Only an empty queue is idle, so there is always room for the first message.
        'turn.requested': { target: 'waiting', actions: 'enqueue' },
        'conversation.close': { target: 'closed', actions: assign({ status: 'closed' }) },
      },
    },
    waiting: {
      // The head message is still being persisted.
      on: {
        'turn.requested': { guard: 'hasRoomBehindHead', actions: 'enqueue' },
        'turn.accepted': { target: 'routing', actions: 'markReady' },
        'turn.withdrawn': { target: 'routing', actions: 'withdraw' },
      },
    },
    answering: {
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({
          turnId: context.activeTurnId!,
          conversationId: context.conversationId,
          maxSteps: context.maxSteps,
        }),
        onDone: { target: 'routing', actions: 'finishActive' },
        // A turn actor that throws still frees the conversation for the next message.
        onError: { target: 'routing', actions: 'finishActive' },
      },
      on: {
        'turn.requested': { guard: 'hasRoom', actions: 'enqueue' },
        'turn.accepted': { actions: 'markReady' },
        'turn.withdrawn': [
          // The running turn's message could not be stored: stop it.
          { guard: 'isActive', actions: sendTo('turn', { type: 'cancel' }) },
          { actions: 'withdraw' },
        ],
        'turn.cancel': { actions: sendTo('turn', { type: 'cancel' }) },
      },
    },
    // A closed conversation takes no turns; it still unloads when idle like any other.
    closed: { after: { idleTimeout: 'unloaded' } },
    unloaded: { type: 'final' },
  },
});
