/**
 * The model port (DESIGN.md "Models"): one streaming call per generation step. The turn runs the tool
 * loop around it: when a step ends with finish reason `tool_calls`, the turn runs the tools, appends the
 * results to `messages` and calls `stream` again.
 */

/** A knowledge-base passage handed to the model and, when used, cited. `score` is higher-is-better. */
export interface Passage {
  document_id: string;
  chunk_id: string;
  title: string;
  /** Heading path inside the document, e.g. `HTTP > Class: http.Agent`; empty at top level. */
  heading: string;
  text: string;
  score: number;
  /** 1-based page the passage starts on (PDF documents); null or absent for formats without pages. */
  page?: number | null;
}

/** A tool call as the model produced it; `arguments` is the raw JSON text the model wrote. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** One message of the model conversation, in OpenAI chat-completions roles. */
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: ModelToolCall[] }
  | { role: 'tool'; tool_call_id: string; name: string; content: string };

/** A tool offered to the model: JSON Schema `parameters`, as in the OpenAI tools format. */
export interface ModelToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Input of one generation step. */
export interface ModelTurnInput {
  /** Provider-specific model name, e.g. `gpt-4o-mini`; the builtin model ignores it. */
  model: string;
  /** Agent instructions + conversation history (oldest first) + tool messages of this turn. */
  messages: ModelMessage[];
  /** Passages retrieved for this turn before generation (best first). */
  passages: Passage[];
  tools: ModelToolSpec[];
  /** Cap on output tokens for this step, if the agent sets one. */
  maxOutputTokens?: number;
}

/** Token counts of one step. Units: tokens. */
export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
}

/** Why a step ended. `tool_calls`: the turn must run tools and call again. */
export type ModelFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** What a step yields, in order: text deltas and tool calls as they come, then usage and finish once. */
export type ModelPart =
  /** `receivedAt`: performance.now() (ms) when the bytes carrying it arrived, if the provider knows. */
  | { type: 'text-delta'; delta: string; receivedAt?: number }
  | { type: 'tool-call'; call: ModelToolCall }
  | { type: 'usage'; usage: ModelUsage }
  | { type: 'finish'; reason: ModelFinishReason; passagesUsed?: string[] };

/**
 * A model provider. `stream` runs one generation step and hands each part to `onPart` synchronously, in
 * order, as it arrives (a push interface: the token hot path is one call, not an async-iterator round
 * trip per token). It resolves after the `finish` part. It rejects with AppError `model_unavailable`
 * (upstream refused or broke) or `model_timeout` (nothing from the upstream within the configured
 * time), with the signal's reason when `signal` aborts (promptly, closing the upstream request), and
 * with `onPart`'s own error if `onPart` throws (the step is then aborted). `finish.passagesUsed` lists
 * the chunk ids the answer drew on when the provider knows (the builtin model does), else the turn
 * cites every passage it handed over.
 */
export interface ModelProvider {
  readonly name: string;
  stream(input: ModelTurnInput, signal: AbortLike, onPart: (part: ModelPart) => void): Promise<void>;
}

/** An abort listener: a function, or an object whose `handleEvent` is called (as EventTarget does); no argument is passed. */
export type AbortListener = (() => void) | { handleEvent(): void };

/**
 * The part of the DOM `AbortSignal` a model step uses to learn that its turn was stopped: a real
 * AbortSignal fits it (tests pass one), and so does a turn's lighter TurnAbort
 * (src/runtime/turn/turn-abort.ts), which a live stream holds instead of an AbortController.
 * `reason` is what the abort was given; listeners are called once, with no argument.
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}
