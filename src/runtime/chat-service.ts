import { conversationMachine } from '../../actors/conversation/conversation.machine.js';
import { digestsEqual } from '../auth/api-keys.js';
import { hashOpaqueToken, isOpaqueToken, newOpaqueToken } from '../auth/opaque-tokens.js';
import { AppError } from '../errors/app-error.js';
import type { EventBus } from '../events/event-bus.js';
import { Outbox, type StoredEvent } from '../events/outbox.js';
import { newId } from '../ids/ids.js';
import { createKnowledgeSearch, type KnowledgeSearch } from '../knowledge/hybrid-search.js';
import type { Logger } from '../log/logger.js';
import type { ModelRegistry } from '../models/registry.js';
import type { TokenCounter } from '../models/token-counter.js';
import type { Store } from '../store/ports.js';
import type { ConversationRecord, MessageRecord } from '../store/records.js';
import { AgentDirectory } from './agent-directory.js';
import { AdmissionControl, type AdmissionLimits, type LagSource, type Release } from './admission.js';
import { ConversationControl } from './conversation-control.js';
import { LiveHub } from './live/live-hub.js';
import { Supervisor, type ConversationActor, type ConversationLogic } from './supervisor.js';
import { TurnChannel } from './turn/turn-channel.js';
import { TurnRegistry } from './turn/turn-registry.js';
import { createTurnRunLogic, startTurn, type TurnRunnerDeps } from './turn/turn-runner.js';
import { Turn } from './turn/turn.js';
import { messageCreated } from './webhooks/event-data.js';

/** A visitor message for an agent (the validated chat request body). */
export interface ChatInput {
  message: string;
  conversation_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** Public chat only: the visitor token of `conversation_id` (API.md "Chat": required with it). */
  visitor_token?: string | undefined;
}

/** A message of the history a new conversation starts with (TurnOptions.history). */
export interface HistoryMessage {
  role: 'visitor' | 'agent';
  content: string;
}

/** How a turn is asked for, beyond the message itself (ChatService.send). */
export interface TurnOptions {
  /**
   * performance.now() (ms) when the request (or socket frame) that asks for the turn arrived: the origin
   * of the turn's timing (API.md "Chat", Timing). Default: when `send` is called.
   */
  arrivedAt?: number;
  /**
   * A new conversation only (ignored with `conversation_id`): messages the conversation starts with, oldest
   * first, stored before the visitor message in the same commit (with no turn) and given to the model as
   * its history. The OpenAI-compatible endpoint passes a request's earlier user and assistant messages.
   */
  history?: HistoryMessage[];
  /**
   * The client's own instructions for this turn (OpenAI-compatible `system` messages): the model gets
   * them after the agent's instructions, never in their place. Not stored.
   */
  clientInstructions?: string;
}

/**
 * Where a message comes from: the API (an API key or a person: the organization's own clients) or a
 * public key (a visitor of a published agent: the conversation is bound to a visitor token).
 */
export type ChatChannel = 'api' | 'public';

export interface ChatServiceOptions {
  store: Store;
  models: ModelRegistry;
  tokens: TokenCounter;
  bus: EventBus;
  logger: Logger;
  maxQueuedTurns: number;
  idleUnloadMs: number;
  maxToolSteps: number;
  retrievalK: number;
  /** The knowledge search of turns (TurnRunnerDeps.search); default the store's bm25 search. */
  search?: KnowledgeSearch;
  /** A finished turn stays replayable this long, ms. */
  turnReplayMs: number;
  /** Per-turn replay cap, characters (default 1 MiB). */
  turnReplayMaxChars?: number;
  /** Cap on the replay characters of all finished turns together (default 64 Mi). */
  replayBudgetChars?: number;
  historyLimit?: number;
  onTurnEnd?: TurnRunnerDeps['onTurnEnd'];
  /** Replaces the conversation machine (tests inject faults); default: the real one. */
  conversationLogic?: ConversationLogic;
  /** Admission control of new turns (503 overloaded past it). */
  admission: AdmissionLimits;
  /** The agent cache shared with AgentService (default: a new one). */
  agents?: AgentDirectory;
  /** Where admission control reads the event loop's lag (the metrics' loop-delay sampler). */
  lag: LagSource;
  /** The live pub/sub of sockets and operator views (default: a new one). */
  live?: LiveHub;
  /** The outbound agent and secrets of HTTP tools (TurnRunnerDeps.httpTools); without it HTTP tool calls fail. */
  httpTools?: TurnRunnerDeps['httpTools'];
  /** The webhook outbox (default: one that knows no endpoint, so no event is written). */
  outbox?: Outbox;
}

/**
 * The chat runtime: turns a visitor message into a running turn and hands back its channel. Order of
 * work (DESIGN.md "One chat turn, as data"): find or create the conversation, queue the turn in the
 * conversation actor (409 when closed or full), store the visitor message, and hand the channel to the
 * caller once that message is durable. The turn may start while the message commits (the model call
 * overlaps the fsync); nothing reaches a client before the commit. Clients only subscribe to the
 * channel, so a client that goes away never stops the turn (SPEC.md 6.1 rule 3).
 *
 * While a person is asked for or answers (status `pending_handoff`, `handed_off`), a visitor message is
 * stored without a turn and forwarded to the operators; its stream is `conversation`, `message`, `done`
 * with finish reason `handoff` (API.md "Chat"). Handoff itself, operator messages and cancels are in
 * `control` (src/runtime/conversation-control.ts).
 */
export class ChatService {
  readonly turns: TurnRegistry;
  readonly supervisor: Supervisor;
  readonly admission: AdmissionControl;
  /** Agents read through a short cache (AgentService invalidates what it changes). */
  readonly agents: AgentDirectory;
  /** Live subscribers (sockets, operator views, the inbox). */
  readonly live: LiveHub;
  /** Handoff, takeover, resolve, close, operator messages and cancels. */
  readonly control: ConversationControl;
  private draining = false;
  private readonly opts: ChatServiceOptions;
  private readonly outbox: Outbox;
  private readonly runnerDeps: TurnRunnerDeps;

  constructor(opts: ChatServiceOptions) {
    this.opts = opts;
    this.outbox = opts.outbox ?? new Outbox();
    const live = opts.live ?? new LiveHub();
    this.live = live;
    this.turns = new TurnRegistry({
      replayMs: opts.turnReplayMs,
      perTurn: { maxChars: opts.turnReplayMaxChars ?? 1024 * 1024 },
      maxRetainedChars: opts.replayBudgetChars ?? 64 * 1024 * 1024,
      onEnded: (channel) => live.turnEnded(channel),
    });
    this.agents = opts.agents ?? new AgentDirectory(opts.store);
    const turns = this.turns;
    this.admission = new AdmissionControl(opts.admission, opts.lag, { live: { get live() { return turns.size; } }, log: opts.logger });
    const runnerDeps: TurnRunnerDeps = {
      store: opts.store, models: opts.models, bus: opts.bus, logger: opts.logger, tokens: opts.tokens,
      retrievalK: opts.retrievalK, historyLimit: opts.historyLimit ?? 40, live, outbox: this.outbox,
      search: opts.search ?? createKnowledgeSearch({ knowledge: opts.store.knowledge }),
      requestHandoff: (turn, reason) =>
        this.control.requestHandoff(turn.orgId, turn.conversationId, { by: 'agent', turnId: turn.id, reason }).then((c) => c.status),
      ...(opts.onTurnEnd ? { onTurnEnd: opts.onTurnEnd } : {}),
      ...(opts.httpTools ? { httpTools: opts.httpTools } : {}),
    };
    this.runnerDeps = runnerDeps;
    const turnLogic = createTurnRunLogic(runnerDeps);
    const logic = (opts.conversationLogic ?? conversationMachine).provide({ actors: { turn: turnLogic } });
    this.supervisor = new Supervisor({
      logic: logic as ConversationLogic, logger: opts.logger, maxQueued: opts.maxQueuedTurns,
      idleMs: opts.idleUnloadMs, maxSteps: opts.maxToolSteps,
      onCrash: (id) => this.failTurnsOf(id),
    });
    this.control = new ConversationControl({
      store: opts.store, bus: opts.bus, logger: opts.logger, live, supervisor: this.supervisor, turns: this.turns, runner: runnerDeps,
      outbox: this.outbox,
    });
  }

  /**
   * Accepts a visitor message for agent `agentId` of `orgId` and returns the turn's channel once the
   * message is durable; its first event (`conversation`) is already emitted and the turn may already be
   * streaming into it. Admission control runs first, before any other work. Throws AppError:
   * `overloaded` (503, Retry-After), `shutting_down`, `not_found` (unknown agent, unknown conversation or
   * one of another agent), `conversation_closed`, `turn_in_progress` (queue full), `unknown_provider`
   * (the agent's provider is not configured), or what the store throws when the message cannot be stored.
   *
   * `via: 'public'` (a visitor of a published agent): a new conversation gets a visitor token (`vt_...`,
   * stored as its SHA-256 hash in the conversation record, so still one write) that the `conversation`
   * event carries as `visitor_token`; continuing a conversation needs its visitor token in `input`, and a
   * missing or wrong one, or a conversation that was not started publicly, is `not_found` (404: whether
   * the conversation exists is not told).
   */
  async send(orgId: string, agentId: string, input: ChatInput, via: ChatChannel = 'api', options: TurnOptions = NO_OPTIONS): Promise<TurnChannel> {
    if (this.draining) throw new AppError('shutting_down', 'The server is shutting down; retry on another instance.');
    const arrivedAt = options.arrivedAt ?? performance.now();
    const slot = this.admission.acquire();
    const release = typeof slot === 'function' ? slot : await slot;
    try {
      return await this.accept(orgId, agentId, input, release, via, arrivedAt, options);
    } catch (err) {
      release();
      throw err;
    }
  }

  private async accept(
    orgId: string, agentId: string, input: ChatInput, release: Release, via: ChatChannel, arrivedAt: number, options: TurnOptions,
  ): Promise<TurnChannel> {
    const { store } = this.opts;
    const found = this.agents.get(orgId, agentId);
    const agent = found instanceof Promise ? await found : found;
    if (!agent) throw new AppError('not_found', 'No such agent.');
    this.opts.models.get(agent.model.provider);
    const now = new Date().toISOString();
    const turnId = newId('turn');
    const visitorMessage = (conversationId: string): MessageRecord => ({
      id: newId('msg'), conversation_id: conversationId, org_id: orgId, turn_id: turnId, role: 'visitor',
      content: input.message, citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null,
      error: null, timing: null, created_at: now,
    });

    let conversation: ConversationRecord;
    let message: MessageRecord;
    let stored: Promise<unknown>;
    let events: StoredEvent[] | undefined;
    let actor: ConversationActor | undefined;
    let visitorToken: string | undefined;
    /** A new conversation's imported history (TurnOptions.history), stored before its first message. */
    let earlier: MessageRecord[] | undefined;
    const isNew = input.conversation_id === undefined;
    if (isNew) {
      // A new conversation's actor always takes its first turn: the commit of the conversation and its
      // first message leaves first, so it overlaps everything below and the model call.
      let tokenHash: string | null = null;
      if (via === 'public') {
        visitorToken = newOpaqueToken('vt');
        tokenHash = hashOpaqueToken(visitorToken);
      }
      conversation = {
        id: newId('conv'), org_id: orgId, agent_id: agent.id, status: 'active', metadata: input.metadata ?? {},
        visitor_token_hash: tokenHash, created_at: now, updated_at: now,
      };
      if (options.history !== undefined && options.history.length > 0) earlier = historyRecords(conversation.id, orgId, options.history, now);
      message = visitorMessage(conversation.id);
      // Webhook events go in the same commit (the outbox); `events` is undefined (no cost) without an endpoint.
      events = this.outbox.wants(orgId) ? this.outbox.events(orgId, [
        { type: 'conversation.created', data: { conversation_id: conversation.id, agent_id: agent.id, metadata: conversation.metadata, created_at: now } },
        ...(earlier ?? []).map((m) => messageCreated(m, agent.id)),
        messageCreated(message, agent.id),
      ], now) : undefined;
      stored = store.conversations.start(conversation, message, events, earlier);
      stored.catch(() => {});
    } else {
      const existing = await store.conversations.get(orgId, input.conversation_id!);
      if (!existing || existing.agent_id !== agent.id) throw new AppError('not_found', 'No such conversation.');
      if (via === 'public' && !visitorTokenMatches(existing, input.visitor_token)) throw new AppError('not_found', 'No such conversation.');
      conversation = existing;
      const acquired = this.supervisor.acquire(conversation);
      actor = acquired instanceof Promise ? await acquired : acquired;
      const status = actor.getSnapshot().context.status;
      if (status === 'closed') throw new AppError('conversation_closed', 'This conversation is closed.');
      // A person was asked for or answers: the message goes to them, not to the agent.
      if (status !== 'active') return this.forward(conversation, { ...visitorMessage(conversation.id), turn_id: null }, turnId, release);
      message = visitorMessage(conversation.id);
      stored = Promise.resolve(); // appended below, once the actor said it takes the turn
    }

    // From here to `turn.requested` nothing awaits, so the place is taken before any other request runs.
    const turn = new Turn({
      id: turnId, conversationId: conversation.id, orgId, agent, visitorMessageId: message.id, question: input.message,
      newConversation: isNew, channel: this.turns.channelFor(turnId, conversation.id, orgId),
      releaseSetup: release, arrivedAt,
      ...(earlier !== undefined ? { seedHistory: earlier } : {}),
      ...(options.clientInstructions ? { clientInstructions: options.clientInstructions } : {}),
    });
    const request = { type: 'turn.requested', turn } as const;
    if (actor === undefined) {
      // A new conversation's actor always takes its first turn, and no other request can name the
      // conversation yet: the turn starts first (its model request goes to undici now when it has
      // nothing to load), then the actor is created and adopts the running turn. undici writes the
      // request in the event loop's check phase (turn-runner.ts `startTurn`), so the actor is created
      // after that write, in the same check phase: its cost (about 0.4 ms at one stream here) then
      // overlaps the upstream's time to first token instead of delaying the request.
      this.emitConversation(turn, visitorToken);
      startTurn(turn, this.opts.maxToolSteps, this.runnerDeps);
      await afterModelRequestWrite();
      // Should the actor not come up, the running turn stops and writes nothing, as it did when the
      // actor came first: the stored message is then a question without a turn (recovery closes it).
      try {
        // The actor starts answering the turn (conversation.machine.ts `firstTurn`): no `turn.requested`.
        actor = this.supervisor.startNew(conversation, turn);
        if (actor.getSnapshot().context.active !== turn) throw new Error('the conversation actor refused its first turn');
      } catch (err) {
        this.opts.logger.error({ err, conversation_id: conversation.id }, 'a new conversation could not take its first turn');
        turn.withdraw('the conversation actor could not take its first turn');
        this.turns.discard(turnId);
        // The commit of the conversation and its message left before the actor was asked for: the error goes
        // out once it has settled, so what the client then reads (the conversation, its unanswered message)
        // is what stays. Whether it committed or not, the answer is the same 500.
        await stored.catch(() => {});
        throw new AppError('internal_error', 'The conversation could not take its first message; send it again.');
      }
    } else {
      const snapshot = actor.getSnapshot();
      if (!snapshot.can(request)) {
        if (snapshot.context.status === 'closed') throw new AppError('conversation_closed', 'This conversation is closed.');
        throw new AppError('turn_in_progress', 'Too many messages are waiting for a reply in this conversation; wait for the current turn to finish.');
      }
      events = this.outbox.wants(orgId) ? this.outbox.events(orgId, [messageCreated(message, agent.id)], now) : undefined;
      stored = store.conversations.appendMessage(message, events);
      stored.catch(() => {});
      this.emitConversation(turn, visitorToken);
      // The turn may start now, so the model call overlaps the commit of the visitor message (an fsync
      // with synchronous=FULL). Nothing reaches the client before that commit: the channel, with every
      // event buffered so far, is only handed out once the message is durable.
      actor.send(request);
    }
    try {
      await stored;
    } catch (err) {
      // The message was not stored: the turn leaves no trace.
      turn.withdraw('the visitor message could not be stored');
      this.turns.discard(turnId);
      actor.send({ type: 'turn.withdrawn', turnId });
      throw err;
    }
    this.outbox.committed(events);
    if (isNew) {
      this.opts.bus.publish({ type: 'conversation.created', org_id: orgId, data: { conversation_id: conversation.id, agent_id: agent.id } });
      this.live.conversationCreated(orgId, conversation.id, agent.id);
      if (earlier !== undefined) {
        for (const m of earlier) {
          this.opts.bus.publish({ type: 'message.created', org_id: orgId, data: { conversation_id: conversation.id, message_id: m.id, role: m.role } });
          this.live.messageCreated(m);
        }
      }
    }
    this.opts.bus.publish({ type: 'message.created', org_id: orgId, data: { conversation_id: conversation.id, message_id: message.id, role: 'visitor' } });
    this.live.messageCreated(message);
    this.live.turnStarted(turn.channel, false);
    return turn.channel;
  }

  /** Emits the turn's first event, `conversation` (with the visitor token of a new public conversation), and registers the turn. */
  private emitConversation(turn: Turn, visitorToken: string | undefined): void {
    turn.emit(visitorToken === undefined
      ? { type: 'conversation', conversation_id: turn.conversationId, turn_id: turn.id }
      : { type: 'conversation', conversation_id: turn.conversationId, turn_id: turn.id, visitor_token: visitorToken });
    this.turns.add(turn);
  }

  /**
   * A visitor message while a person is asked for or answers: stored without a turn (so start-up
   * recovery never takes it for a turn cut short), forwarded to the operators, and streamed as
   * `conversation`, `message`, `done` / `handoff` (API.md "Chat"). Its channel is not registered: it is
   * complete when handed out, and a resume of it is a 404 (fetch the messages instead).
   */
  private async forward(conversation: ConversationRecord, message: MessageRecord, turnId: string, release: Release): Promise<TurnChannel> {
    release();
    const channel = new TurnChannel(turnId, conversation.id, conversation.org_id, { maxChars: 64 * 1024 });
    channel.emit({ type: 'conversation', conversation_id: conversation.id, turn_id: turnId });
    const events = this.outbox.events(conversation.org_id, [messageCreated(message, conversation.agent_id)], message.created_at);
    await this.opts.store.conversations.appendMessage(message, events);
    this.outbox.committed(events);
    channel.emit({ type: 'message', message_id: message.id });
    channel.emit({ type: 'done', finish_reason: 'handoff' });
    this.opts.bus.publish({ type: 'message.created', org_id: conversation.org_id, data: { conversation_id: conversation.id, message_id: message.id, role: 'visitor' } });
    this.live.messageCreated(message);
    return channel;
  }

  /**
   * The turns of a conversation that have not ended, running one first, then the queued ones in order
   * (for a listen-only socket that joins while they run). Empty when its actor is not loaded.
   */
  pendingTurns(conversationId: string): TurnChannel[] {
    const context = this.supervisor.peek(conversationId)?.getSnapshot().context;
    if (context === undefined) return [];
    const out: TurnChannel[] = [];
    if (context.active !== null) out.push((context.active as unknown as Turn).channel);
    for (const t of context.queue) out.push((t as unknown as Turn).channel);
    return out;
  }

  /**
   * The channel of a running or recently finished turn of `orgId`'s conversation, for resume. Throws
   * AppError `not_found` when there is no such turn or its events are no longer kept (the client then
   * fetches the stored messages).
   */
  replay(orgId: string, conversationId: string, turnId: string): TurnChannel {
    const channel = this.turns.channel(turnId);
    if (!channel || channel.orgId !== orgId || channel.conversationId !== conversationId || !channel.isReplayable) {
      throw new AppError('not_found', 'No such turn, or its events are no longer kept; fetch the conversation messages instead.');
    }
    return channel;
  }

  /**
   * The channel of a running or recently finished turn of `orgId` (any conversation), for a socket's
   * `resume` frame. Throws AppError `not_found` like `replay`.
   */
  turnChannel(orgId: string, turnId: string): TurnChannel {
    const channel = this.turns.channel(turnId);
    if (!channel || channel.orgId !== orgId || !channel.isReplayable) {
      throw new AppError('not_found', 'No such turn, or its events are no longer kept; fetch the conversation messages instead.');
    }
    return channel;
  }

  /** Aborts the running turns of a conversation whose actor crashed: each ends with a stored failed reply. */
  private failTurnsOf(conversationId: string): void {
    for (const turn of this.turns.all()) {
      if (turn.conversationId === conversationId) turn.abort(new AppError('internal_error', 'The conversation failed; send the message again.'));
    }
  }

  /**
   * Graceful drain (SIGTERM): refuse new turns, wait for running ones up to `graceMs`, then abort the
   * rest (they end with an error event and a stored failed reply). Resolves when no turn runs.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const deadline = Date.now() + graceMs;
    while (this.turns.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    if (this.turns.size > 0) {
      for (const turn of this.turns.all()) turn.abort(new AppError('shutting_down', 'The server shut down during this turn.'));
      const hard = Date.now() + 2000;
      while (this.turns.size > 0 && Date.now() < hard) await new Promise((r) => setTimeout(r, 10));
    }
    this.supervisor.stopAll();
    this.turns.close();
    this.admission.close();
  }

  get isDraining(): boolean {
    return this.draining;
  }
}

const NO_OPTIONS: TurnOptions = {};

/**
 * The stored form of a new conversation's imported history: completed messages of no turn (so start-up
 * recovery never takes one for a turn cut short), ids made in order (so they sort before the first visitor
 * message, whose id is made after them), all at `at`.
 */
function historyRecords(conversationId: string, orgId: string, history: HistoryMessage[], at: string): MessageRecord[] {
  return history.map((h) => ({
    id: newId('msg'), conversation_id: conversationId, org_id: orgId, turn_id: null, role: h.role, content: h.content,
    citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: at,
  }));
}

/** True when `token` is the visitor token of `conversation` (SHA-256 compared in constant time). */
export function visitorTokenMatches(conversation: ConversationRecord, token: string | undefined): boolean {
  if (conversation.visitor_token_hash === null || token === undefined || !isOpaqueToken(token, 'vt')) return false;
  return digestsEqual(hashOpaqueToken(token), conversation.visitor_token_hash);
}

/**
 * Resolves in the event loop's check phase, after the `setImmediate` callbacks queued before it: undici
 * (7.28 and later) writes a request on a reused keep-alive connection from such a callback. It queues
 * that callback when the request is dispatched (a string body) or from a microtask queued then (an
 * iterable body: OneShotBody, for bodies over RETAINED_BODY_MAX_CHARS), so this queues its own from a
 * microtask queued after undici's: work awaited after this runs once the request bytes are on the
 * socket. On a new connection the write waits for the connect, and the work overlaps it. When the
 * request was not dispatched yet (the turn loads history or passages first), it only defers that work
 * by one loop iteration.
 */
function afterModelRequestWrite(): Promise<void> {
  return new Promise((resolve) => queueMicrotask(() => setImmediate(resolve)));
}
