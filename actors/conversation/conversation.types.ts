import type { ConversationStatus } from '../../src/vocabulary/conversation.js';
import type { TurnEnded, TurnHandle, TurnOutput } from '../turn/turn.types.js';

export type { ConversationStatus };

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
  /** Turns waiting to run, in arrival order (the running one is not in it). */
  queue: TurnHandle[];
  /** The turn being answered, if any. */
  active: TurnHandle | null;
  /** Outcome of the last finished turn (for observers and tests). */
  lastTurn: TurnOutput | null;
}

export type ConversationEvent =
  /**
   * A visitor message arrived: queue its turn (refused by guard when closed or the queue is full). The
   * turn may start at once; the runtime withdraws it if the message then fails to store.
   */
  | { type: 'turn.requested'; turn: TurnHandle }
  /** The turn's visitor message could not be stored: drop it from the queue (a running one ends itself). */
  | { type: 'turn.withdrawn'; turnId: string }
  /** Stop the running turn (client cancel); with `turnId`, only if that turn is the running one. */
  | { type: 'turn.cancel'; turnId?: string }
  /** Sent by the running turn actor when it is over. */
  | TurnEnded
  | { type: 'conversation.close' };
