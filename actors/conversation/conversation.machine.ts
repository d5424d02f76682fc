import { and, assign, fromCallback, sendTo, setup } from 'xstate';
import type { TurnCommand, TurnInput, TurnOutput } from '../turn/turn.types.js';
import type { ConversationContext, ConversationEvent, ConversationInput } from './conversation.types.js';

const FAILED_TO_START = { type: 'api_error', code: 'internal_error', message: 'The turn could not start.' } as const;

/**
 * The conversation machine: who answers (the `status` in context: the agent while `active`) and the turn
 * queue. A visitor message queues its turn (`turn.requested`); turns run one at a time, in arrival order,
 * each as one invoked `turn` actor that gets the runtime's turn object as input and reports `turn.ended`
 * when it is over. When nothing is queued or running for `idleMs`, the machine reaches the final state
 * `unloaded` and the supervisor drops it (rehydrated from the store on the next event).
 *
 * Handoff (API.md "Conversations and handoff"): `active -> pending_handoff -> handed_off -> active`, a
 * takeover straight from `active`, a resolve straight from `pending_handoff`, and `closed` from any status.
 * The status lives in context, the states say whether a turn runs (`idle`, `answering`) or never will
 * again (`closed`), so a status change while a turn runs needs no extra state: the change drops the
 * queue and stops the running turn (`cancel` with the reason), which then ends as usual, and the machine
 * goes to `idle` (or `closed`). While the status is not `active` no turn is taken (`turn.requested` is
 * refused by guard; the runtime forwards the visitor message to the operators instead, and answers 409
 * conversation_closed once closed). A transition that would not change the status is refused by guard,
 * so the runtime can tell "changed" from "already so" with `snapshot.can(event)`.
 *
 * Cost matters here (one actor per conversation, one per turn): no eventless transitions outside the
 * one-time `boot` state, the next turn starts in the same transition that ends the previous one, and a
 * new conversation's actor starts answering its first turn (`firstTurn` in the input) as it starts.
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
    hasActive: ({ context }) => context.active !== null,
    isClosed: ({ context }) => context.status === 'closed',
    isActive: ({ context }) => context.status === 'active',
    isOpen: ({ context }) => context.status !== 'closed',
    canTakeOver: ({ context }) => context.status === 'active' || context.status === 'pending_handoff',
    canResolve: ({ context }) => context.status === 'pending_handoff' || context.status === 'handed_off',
    endsActive: ({ context, event }) => event.type === 'turn.ended' && event.output.turnId === context.active?.id,
    cancelsActive: ({ context, event }) =>
      event.type === 'turn.cancel' && (event.turnId === undefined || event.turnId === context.active?.id),
    askedByOtherThanActive: ({ context, event }) =>
      event.type === 'handoff.request' && (event.turnId === undefined || event.turnId !== context.active?.id),
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
    toPending: assign({ status: 'pending_handoff', queue: [] }),
    toHandedOff: assign({ status: 'handed_off', queue: [] }),
    toActive: assign({ status: 'active' }),
    toClosed: assign({ status: 'closed', queue: [] }),
    stopForClient: sendTo('turn', { type: 'cancel', reason: 'client' } satisfies TurnCommand),
    stopForHandoff: sendTo('turn', { type: 'cancel', reason: 'handoff' } satisfies TurnCommand),
    stopForClose: sendTo('turn', { type: 'cancel', reason: 'closed' } satisfies TurnCommand),
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
    active: input.status === 'active' ? input.firstTurn ?? null : null,
    lastTurn: null,
  }),
  initial: 'boot',
  states: {
    boot: {
      always: [{ guard: 'isClosed', target: 'closed' }, { guard: 'hasActive', target: 'answering' }, { target: 'idle' }],
    },
    idle: {
      after: { idleTimeout: 'unloaded' },
      on: {
        // Only an empty queue is idle: the first message starts at once.
        'turn.requested': { guard: 'isActive', target: 'answering', actions: 'start' },
        'handoff.request': { guard: 'isActive', actions: 'toPending' },
        'handoff.takeover': { guard: 'canTakeOver', actions: 'toHandedOff' },
        'handoff.resolve': { guard: 'canResolve', actions: 'toActive' },
        'conversation.close': { target: 'closed', actions: 'toClosed' },
      },
    },
    answering: {
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({ turn: context.active!, maxSteps: context.maxSteps }),
        // A turn actor that throws as it starts still frees the conversation (it never sends turn.ended).
        onError: [
          { guard: and(['hasQueued', 'isActive']), target: 'answering', reenter: true, actions: ['failToStart', 'startNext'] },
          { guard: 'isClosed', target: 'closed', actions: 'failToStart' },
          { target: 'idle', actions: 'failToStart' },
        ],
      },
      on: {
        // The next queued turn starts in the same transition that ends this one.
        'turn.ended': [
          { guard: and(['endsActive', 'hasQueued', 'isActive']), target: 'answering', reenter: true, actions: 'finishAndStartNext' },
          { guard: and(['endsActive', 'isClosed']), target: 'closed', actions: 'finish' },
          { guard: 'endsActive', target: 'idle', actions: 'finish' },
        ],
        'turn.requested': { guard: and(['isActive', 'hasRoom']), actions: 'enqueue' },
        'turn.withdrawn': { actions: 'withdraw' },
        'turn.cancel': { guard: 'cancelsActive', actions: 'stopForClient' },
        'handoff.request': [
          // The agent's own tool asked: the turn goes on and ends with finish reason `handoff` by itself.
          { guard: and(['isActive', 'askedByOtherThanActive']), actions: ['toPending', 'stopForHandoff'] },
          { guard: 'isActive', actions: 'toPending' },
        ],
        'handoff.takeover': [
          { guard: 'isActive', actions: ['toHandedOff', 'stopForHandoff'] },
          // pending_handoff: the running turn was already told to stop when the handoff was asked for.
          { guard: 'canTakeOver', actions: 'toHandedOff' },
        ],
        'handoff.resolve': { guard: 'canResolve', actions: 'toActive' },
        // The running turn stops and stores what it said; the machine closes when it has ended.
        'conversation.close': { guard: 'isOpen', actions: ['toClosed', 'stopForClose'] },
      },
    },
    // A closed conversation takes no turns; it still unloads when idle like any other.
    closed: { after: { idleTimeout: 'unloaded' } },
    unloaded: { type: 'final' },
  },
});
