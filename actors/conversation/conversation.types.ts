import type { TurnOutput } from '../turn/turn.types.js';

/** Conversation status values of API.md ("active", "pending_handoff", "handed_off", "closed"). */
export type ConversationStatus = 'active' | 'pending_handoff' | 'handed_off' | 'closed';

/** A visitor message waiting for its turn. `ready` once the message is durable in the store. */
export interface QueuedTurn {
  turnId: string;
  ready: boolean;
}

export interface ConversationInput {
  conversationId: string;
  status: ConversationStatus;
  /** Turns that may wait behind the running one. */
  maxQueued: number;
  /** Idle time before the actor unloads itself, ms. */
  idleMs: number;
  /** Model calls per turn. */
  maxSteps: number;
}

export interface ConversationContext {
  conversationId: string;
  status: ConversationStatus;
  maxQueued: number;
  idleMs: number;
  maxSteps: number;
  /** Waiting turns, in arrival order (the running one is not in it). */
  queue: QueuedTurn[];
  /** The turn being answered, if any. */
  activeTurnId: string | null;
  /** Outcome of the last finished turn (for observers and tests). */
  lastTurn: TurnOutput | null;
}

export type ConversationEvent =
  /** A visitor message arrived: reserve a place (refused by guard when closed or the queue is full). */
  | { type: 'turn.requested'; turnId: string }
  /** The visitor message is durable: the turn may start. */
  | { type: 'turn.accepted'; turnId: string }
  /** Persisting the visitor message failed: give the place back. */
  | { type: 'turn.withdrawn'; turnId: string }
  /** Stop the running turn (client cancel). */
  | { type: 'turn.cancel' }
  | { type: 'conversation.close' };
