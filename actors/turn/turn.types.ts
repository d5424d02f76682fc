/**
 * Types of the turn machine: one agent reply (DESIGN.md "One chat turn, as data"). The machine sees the
 * turn's lifecycle (started, generating, tools, finishing, ended), never a token: tokens go straight
 * from the model to the turn's fan-out channel inside the runtime.
 */
import type { FinishReason, TurnError } from '../../src/vocabulary/turn.js';

export type { FinishReason, TurnError };

/**
 * The runtime's turn object as the machines see it: opaque but for its id. The machines pass it on
 * (queue -> turn actor input -> the invoked `run` callback) and never look inside.
 */
export interface TurnHandle {
  readonly id: string;
}

export interface TurnInput {
  turn: TurnHandle;
  /** Model calls allowed in the tool loop (>= 1). */
  maxSteps: number;
}

/** Which part of the turn is running. */
export type TurnPhase = 'preparing' | 'generating' | 'runningTools' | 'finishing';

export interface TurnContext {
  turn: TurnHandle;
  maxSteps: number;
  /** Generation steps started so far. */
  step: number;
  finishReason: FinishReason | null;
  error: TurnError | null;
}

/** Lifecycle events the `run` callback sends back to the machine, and `cancel` from outside. */
export type TurnEvent =
  /** A model call starts (`step` counts from 1). */
  | { type: 'turn.generating'; step: number }
  /** The model asked for tools; they run now. */
  | { type: 'turn.tools'; count: number }
  /** Generation is over: safety check, then the reply is stored. */
  | { type: 'turn.finishing' }
  /** The reply is stored and `done` was emitted. */
  | { type: 'turn.succeeded'; finishReason: FinishReason }
  /** The turn failed (an `error` event was emitted) or was withdrawn before it could answer. */
  | { type: 'turn.failed'; error: TurnError }
  /** Stop the turn (client cancel): the reply so far is kept with finish reason `cancelled`. */
  | { type: 'cancel' };

/** The `run` callback's input: the turn object and the tool-loop bound. */
export interface TurnRunInput {
  turn: TurnHandle;
  maxSteps: number;
}

/** Output of the turn actor when it reaches a final state. */
export type TurnOutput =
  | { turnId: string; outcome: 'succeeded'; finishReason: FinishReason }
  | { turnId: string; outcome: 'failed'; error: TurnError };

/** What one generation step ended with, as the turn rules see it. */
export interface StepOutcome {
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  /** Tool calls the model asked for in this step. */
  toolCalls: number;
}
