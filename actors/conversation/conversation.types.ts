import type { ConversationStatus } from '../../src/vocabulary/conversation.js';
import type { CancelReason, TurnEnded, TurnHandle, TurnOutput } from '../turn/turn.types.js';

export type { ConversationStatus };

export interface ConversationInput {
  conversationId: string;
  /** The stored status the actor starts from (a conversation rehydrated in handoff stays in handoff). */
  status: ConversationStatus;
  /** Turns that may wait behind the running one. */
  maxQueued: number;
  /** Idle time before the actor unloads itself, ms. */
  idleMs: number;
  /** Model calls per turn. */
  maxSteps: number;
  /**
   * The first turn of a conversation created for it (an `active` one): the actor starts answering it,
   * as if `turn.requested` had arrived while idle, without passing through `idle` (no idle timer armed
   * and cancelled, no second macrostep).
   */
  firstTurn?: TurnHandle;
}

export interface ConversationContext {
  conversationId: string;
  /**
   * Who answers (API.md "Conversations and handoff"): `active` the agent; `pending_handoff` nobody yet
   * (a person was asked for); `handed_off` a person; `closed` nobody, ever again. The runtime persists
   * every change (conversations.setStatus) before it acknowledges it.
   */
  status: ConversationStatus;
  maxQueued: number;
  idleMs: number;
  maxSteps: number;
  /** Turns waiting to run, in arrival order (the running one is not in it). Empty unless `active`. */
  queue: TurnHandle[];
  /** The turn being answered, if any. */
  active: TurnHandle | null;
  /** Outcome of the last finished turn (for observers and tests). */
  lastTurn: TurnOutput | null;
}

/** Who asked for a person: the API (an operator or a server), the visitor (public endpoints), the agent's tool. */
export type HandoffRequester = 'api' | 'visitor' | 'agent';

export type ConversationEvent =
  /**
   * A visitor message arrived: queue its turn (refused by guard unless `active`, or when the queue is
   * full). The turn may start at once; the runtime withdraws it if the message then fails to store.
   */
  | { type: 'turn.requested'; turn: TurnHandle }
  /** The turn's visitor message could not be stored: drop it from the queue (a running one ends itself). */
  | { type: 'turn.withdrawn'; turnId: string }
  /** Stop the running turn (client cancel); with `turnId`, only if that turn is the running one. */
  | { type: 'turn.cancel'; turnId?: string }
  /** Sent by the running turn actor when it is over. */
  | TurnEnded
  /**
   * `active -> pending_handoff`. The queued turns are dropped (the runtime forwards their messages to
   * the operators) and the running turn is stopped (`handoff`), unless it is the turn that asked
   * (`turnId`: the agent's `handoff_to_human` tool), which ends by itself with finish reason `handoff`.
   */
  | { type: 'handoff.request'; by: HandoffRequester; turnId?: string }
  /** `active | pending_handoff -> handed_off`: a person answers from now on (queue dropped, running turn stopped). */
  | { type: 'handoff.takeover' }
  /** `pending_handoff | handed_off -> active`: the agent answers again. */
  | { type: 'handoff.resolve' }
  /** Any status but `closed` -> `closed`: no turn is taken again (queue dropped, running turn stopped). */
  | { type: 'conversation.close' };

export type { CancelReason };
