/**
 * One turn: one agent reply to one visitor message, as a single object.
 *
 * Ownership and lifetime:
 * - ChatService.send creates it when a visitor message is accepted, emits its `conversation` event and
 *   registers it in the TurnRegistry, then hands it to the conversation actor in `turn.requested`.
 * - The conversation actor queues it and, when its turn comes, invokes the turn actor with it as
 *   `input`; the actor's callback (turn-runner.ts) does the work on this object alone. The first turn of
 *   a new conversation is started by ChatService just before its actor is created, and the actor adopts
 *   that run (`run` below) instead of starting another. Nothing
 *   looks a running turn up by id, except transport requests that name one (resume, cancel) through the
 *   registry.
 * - It ends exactly once: `done` or `error` on its channel (the runner), or `withdraw` (its visitor
 *   message could not be stored: nothing of it is kept). Then the registry drops the turn and keeps
 *   only its channel, for resume, for a bounded time and size.
 * - The model context below (messages, passages, text, tool runs, usage) is written only by the runner.
 */
import type { CancelReason, TurnOutput } from '../../../actors/turn/turn.types.js';
import type { AbortLike, ModelMessage, Passage } from '../../models/port.js';
import type { AgentRecord, Fence, MessageRecord } from '../../store/records.js';
import type { StreamEvent } from '../../vocabulary/stream-event.js';
import type { ToolRun, TurnTiming, Usage } from '../../vocabulary/turn.js';
import { TurnAbort } from './turn-abort.js';
import type { TurnChannel } from './turn-channel.js';

/**
 * The abort reason of a client's cancel (or a close of the conversation): the runner keeps what was said
 * and finishes as `cancelled`.
 */
export const CANCELLED: unique symbol = Symbol('turn cancelled by the client');
/** The abort reason of a handoff: the runner keeps what was said and finishes as `handoff`. */
export const HANDED_OFF: unique symbol = Symbol('turn stopped by a handoff');

/** What a turn is created from. */
export interface TurnInit {
  id: string;
  conversationId: string;
  orgId: string;
  agent: AgentRecord;
  visitorMessageId: string;
  question: string;
  /** The conversation was created by this turn's message: it has no history to load. */
  newConversation: boolean;
  channel: TurnChannel;
  /** Frees the turn's admission slot; called once set-up is over. */
  releaseSetup?: () => void;
  /**
   * The conversation's lease fence this turn runs under (src/runtime/placement/placement.ts): every write
   * of the turn carries it, so it is refused once another process took the conversation over.
   */
  fence?: Fence | undefined;
  /** performance.now() (ms) when the request that asked for the turn arrived; default: now. */
  arrivedAt?: number;
  /**
   * A new conversation only: the messages stored before its first visitor message (an OpenAI-compatible
   * client's earlier messages), given to the model as history in place of a history read.
   */
  seedHistory?: MessageRecord[];
  /**
   * The client's own instructions for this turn (OpenAI-compatible `system` messages): given to the model
   * after the agent's instructions, never in place of them.
   */
  clientInstructions?: string;
}

/** `ms` rounded to the microsecond. */
function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

export class Turn {
  readonly id: string;
  readonly conversationId: string;
  readonly orgId: string;
  readonly agent: AgentRecord;
  readonly visitorMessageId: string;
  readonly question: string;
  readonly newConversation: boolean;
  readonly channel: TurnChannel;
  /** The lease fence its writes carry (TurnInit.fence); undefined for writes without one (tests). */
  readonly fence: Fence | undefined;
  readonly seedHistory: MessageRecord[] | undefined;
  readonly clientInstructions: string | undefined;
  /**
   * Aborts the model call and tools: `CANCELLED` (client cancel), `HANDED_OFF`, or an AppError (shutdown,
   * crash). A TurnAbort, not an AbortController: a live stream holds it all its life (turn-abort.ts).
   */
  readonly cancellation = new TurnAbort();

  /** Model context: instructions, history and this turn's question, grown by the tool loop. */
  messages: ModelMessage[] = [];
  /** Passages retrieved up front plus those found by tool calls (deduplicated by chunk id). */
  passages: Passage[] = [];
  /** Reply text so far (every generation step). */
  text = '';
  toolRuns: ToolRun[] = [];
  inputTokens = 0;
  outputTokens = 0;
  /** Chunk ids the model said it used, when it says (builtin); else every passage is cited. */
  passagesUsed: string[] | undefined;
  /** The agent's `handoff_to_human` tool ran in this turn: it ends with finish reason `handoff`. */
  handedOff = false;
  /**
   * performance.now() (ms) of the steps {@link timing} reports, 0 until the step happens: the request's
   * arrival, the turn's start (runner step 1), the first model call, the arrival of the upstream bytes
   * that carried the first token (0 when the provider does not stamp it: the builtin model), and the
   * first token's emit.
   */
  readonly arrivedAt: number;
  startedAt = 0;
  modelCalledAt = 0;
  firstTokenReceivedAt = 0;
  firstTokenAt = 0;
  /** The turn's work once started (turn-runner.ts `startTurn`): how it ended; never rejects. */
  run: Promise<TurnOutput> | undefined;
  private withdrawnBecause: string | undefined;
  private releaseSetup: (() => void) | undefined;

  constructor(init: TurnInit) {
    this.id = init.id;
    this.conversationId = init.conversationId;
    this.orgId = init.orgId;
    this.agent = init.agent;
    this.visitorMessageId = init.visitorMessageId;
    this.question = init.question;
    this.newConversation = init.newConversation;
    this.channel = init.channel;
    this.releaseSetup = init.releaseSetup;
    this.fence = init.fence;
    this.arrivedAt = init.arrivedAt ?? performance.now();
    this.seedHistory = init.seedHistory;
    this.clientInstructions = init.clientInstructions;
  }

  /**
   * The turn's timing (API.md "Chat", Timing) with `endAt` (performance.now(), ms) as its end: each step
   * in ms from the request's arrival, rounded to the microsecond; null for a step that did not happen.
   */
  timing(endAt: number): TurnTiming {
    const from = this.arrivedAt;
    const at = (t: number): number | null => (t === 0 ? null : roundMs(t - from));
    return {
      queued_ms: at(this.startedAt), setup_ms: at(this.modelCalledAt), upstream_first_byte_ms: at(this.firstTokenReceivedAt),
      first_token_ms: at(this.firstTokenAt), total_ms: roundMs(endAt - from),
    };
  }

  /**
   * The turn's set-up is over (the model is being called, or the turn ended): frees its admission slot
   * (src/runtime/admission.ts). Idempotent.
   */
  setupDone(): void {
    const release = this.releaseSetup;
    this.releaseSetup = undefined;
    release?.();
  }

  /** The turn's abort signal, for the model call (src/models/port.ts `AbortLike`). */
  get signal(): AbortLike {
    return this.cancellation;
  }

  /** True once the turn ended (terminal event emitted) or was withdrawn. */
  get ended(): boolean {
    return this.channel.ended || this.withdrawnBecause !== undefined;
  }

  /** Why the turn was withdrawn, if it was. */
  get withdrawnReason(): string | undefined {
    return this.withdrawnBecause;
  }

  get usage(): Usage {
    return { input_tokens: this.inputTokens, output_tokens: this.outputTokens, total_tokens: this.inputTokens + this.outputTokens };
  }

  /** Emits a stream event on the turn's channel (dropped once the turn ended). */
  emit(event: StreamEvent): void {
    this.channel.emit(event);
  }

  /**
   * Stops the model call; the runner stores the partial reply with finish reason `cancelled` (reason
   * `client` or `closed`) or `handoff` (reason `handoff`). A turn still queued is stopped before it
   * starts (its reply is then empty). Idempotent: the first reason wins.
   */
  cancel(reason: CancelReason = 'client'): void {
    this.cancellation.abort(reason === 'handoff' ? HANDED_OFF : CANCELLED);
  }

  /** Aborts the turn with `reason` (an AppError: shutdown, crash); the runner stores a failed reply. */
  abort(reason: unknown): void {
    this.cancellation.abort(reason);
  }

  /**
   * The visitor message could not be stored: the turn must leave no trace. The runner, wherever it is,
   * stops without writing (its channel was never handed to a client).
   */
  withdraw(reason: string): void {
    if (this.ended) return;
    this.withdrawnBecause = reason;
    this.cancellation.abort(new Error(`turn withdrawn: ${reason}`));
  }
}
