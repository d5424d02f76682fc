import type { ModelMessage, Passage } from '../models/port.js';
import type { AgentRecord, ToolRun } from '../store/ports.js';
import { TurnChannel } from './turn-channel.js';

/**
 * The data of one running turn, shared by the turn actor's I/O steps (the machine itself only holds
 * lifecycle). Created when the visitor message is accepted; dropped when the turn ends (its channel
 * stays replayable).
 */
export interface TurnSession {
  turnId: string;
  conversationId: string;
  orgId: string;
  agent: AgentRecord;
  visitorMessageId: string;
  question: string;
  /** The conversation was created by this turn's message: it has no history to load. */
  newConversation: boolean;
  channel: TurnChannel;
  /** Aborted on shutdown past the grace period. */
  abort: AbortController;
  /** Model context, filled by `prepare` and grown by the tool loop. */
  messages: ModelMessage[];
  /** Passages retrieved up front plus those found by tool calls (deduplicated by chunk id). */
  passages: Passage[];
  /** Reply text so far (all steps). */
  text: string;
  /** Text of the current generation step. */
  stepText: string;
  toolRuns: ToolRun[];
  inputTokens: number;
  outputTokens: number;
  usageReported: boolean;
  /** Chunk ids the model said it used, when it says (builtin). */
  passagesUsed: string[] | undefined;
  /** performance.now() at acceptance, at the first model call and after the first token's write (ms). */
  acceptedAt: number;
  modelCalledAt: number;
  firstTokenAt: number;
}

/**
 * Registry of running turn sessions and of recently finished channels (kept `replayMs` for resume,
 * API.md "Chat": a finished turn stays replayable for at least 5 minutes).
 */
export class TurnSessions {
  private readonly running = new Map<string, TurnSession>();
  private readonly channels = new Map<string, TurnChannel>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly replayMs: number) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), Math.min(60_000, Math.max(1000, replayMs))).unref();
  }

  open(init: Omit<TurnSession, 'channel' | 'abort' | 'messages' | 'passages' | 'text' | 'stepText' | 'toolRuns'
    | 'inputTokens' | 'outputTokens' | 'usageReported' | 'passagesUsed' | 'acceptedAt' | 'modelCalledAt' | 'firstTokenAt'>): TurnSession {
    const session: TurnSession = {
      ...init,
      channel: new TurnChannel(init.turnId, init.conversationId, init.orgId),
      abort: new AbortController(),
      messages: [], passages: [], text: '', stepText: '', toolRuns: [],
      inputTokens: 0, outputTokens: 0, usageReported: false, passagesUsed: undefined,
      acceptedAt: performance.now(), modelCalledAt: 0, firstTokenAt: 0,
    };
    this.running.set(init.turnId, session);
    this.channels.set(init.turnId, session.channel);
    return session;
  }

  /** The running session; throws when it is gone (a turn actor outliving its session is a bug). */
  get(turnId: string): TurnSession {
    const s = this.running.get(turnId);
    if (!s) throw new Error(`no running turn session ${turnId}`);
    return s;
  }

  /** Drops the session data (the channel stays for replay). */
  finish(turnId: string): void {
    this.running.delete(turnId);
  }

  /** Drops a session whose visitor message could not be accepted, channel included. */
  discard(turnId: string): void {
    this.running.delete(turnId);
    this.channels.delete(turnId);
  }

  /** A running or recently finished turn's channel. */
  channel(turnId: string): TurnChannel | undefined {
    return this.channels.get(turnId);
  }

  /** Running sessions (for draining and crash recovery). */
  all(): IterableIterator<TurnSession> {
    return this.running.values();
  }

  get size(): number {
    return this.running.size;
  }

  private sweep(now: number): void {
    for (const [id, ch] of this.channels) {
      if (ch.ended && now - ch.endedAtMs > this.replayMs) this.channels.delete(id);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
