/**
 * Types of a turn: one agent reply (DESIGN.md "One chat turn, as data"). A turn is one actor: a callback
 * invoked by its conversation's machine (actors/conversation/), whose work is plain async code in the
 * runtime (src/runtime/turn/turn-runner.ts). The machine sees the turn start (the invoke) and end
 * (`turn.ended`), and can cancel it; it never sees a token.
 */
import type { FinishReason, TurnError } from '../../src/vocabulary/turn.js';

export type { FinishReason, TurnError };

/**
 * The runtime's turn object as the machines see it: opaque but for its id. The machines pass it on
 * (queue -> the invoked turn actor's input) and never look inside.
 */
export interface TurnHandle {
  readonly id: string;
}

/** The turn actor's input: the turn object and the tool-loop bound (model calls, >= 1). */
export interface TurnInput {
  turn: TurnHandle;
  maxSteps: number;
}

/**
 * Why a running turn is stopped: `client` (a cancel frame or `POST .../cancel`: the turn ends `done` /
 * `cancelled`), `handoff` (a person was asked for or took over: `done` / `handoff`), `closed` (the
 * conversation was closed: `done` / `cancelled`). In every case the partial reply is stored.
 */
export type CancelReason = 'client' | 'handoff' | 'closed';

/** What the conversation machine may send to the running turn actor. */
export type TurnCommand = { type: 'cancel'; reason: CancelReason };

/** How a turn ended. */
export type TurnOutput =
  | { turnId: string; outcome: 'succeeded'; finishReason: FinishReason }
  | { turnId: string; outcome: 'failed'; error: TurnError };

/** What the turn actor sends its conversation when it is over (exactly once). */
export interface TurnEnded {
  type: 'turn.ended';
  output: TurnOutput;
}

/** What one generation step ended with, as the turn rules see it. */
export interface StepOutcome {
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  /** Tool calls the model asked for in this step. */
  toolCalls: number;
}
