/**
 * Types of the turn machine: one agent reply (DESIGN.md "One chat turn, as data"). The machine sees
 * lifecycle only; tokens go straight to the turn's fan-out channel, never through a transition.
 */

/** A tool call the model asked for (raw JSON `arguments`). */
export interface TurnToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Why the turn ended, as sent in the `done` event (API.md "Chat"). */
export type TurnFinishReason = 'stop' | 'length' | 'content_filter' | 'handoff' | 'cancelled';

/** The error of a failed turn, as in the `error` event. */
export interface TurnError {
  type: string;
  code: string;
  message: string;
}

export interface TurnInput {
  turnId: string;
  conversationId: string;
  /** Model calls allowed in the tool loop. */
  maxSteps: number;
}

/** Result of one generation step. */
export interface StepResult {
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  toolCalls: TurnToolCall[];
}

export interface TurnContext {
  turnId: string;
  conversationId: string;
  maxSteps: number;
  /** Generation steps started so far. */
  step: number;
  pendingToolCalls: TurnToolCall[];
  finishReason: TurnFinishReason;
  error: TurnError | null;
}

export type TurnEvent = { type: 'cancel' };

/** Output of the turn actor when it reaches a final state. */
export type TurnOutput =
  | { turnId: string; outcome: 'succeeded'; finishReason: TurnFinishReason }
  | { turnId: string; outcome: 'failed'; error: TurnError };

/** Inputs of the provided (I/O) actors. */
export interface TurnStepInput { turnId: string; step: number }
export interface RunToolsInput { turnId: string; calls: TurnToolCall[] }
export interface FinishInput { turnId: string; finishReason: TurnFinishReason }
export interface FailInput { turnId: string; error: TurnError }
