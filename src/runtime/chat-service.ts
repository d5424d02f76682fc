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
import { conversationKey, LiveHub } from './live/live-hub.js';
import { Supervisor, type ConversationActor, type ConversationLogic } from './supervisor.js';
import { TurnChannel } from './turn/turn-channel.js';
import { TurnRegistry } from './turn/turn-registry.js';
import { createTurnRunLogic, startTurn, type TurnRunnerDeps } from './turn/turn-runner.js';
import { Turn } from './turn/turn.js';
import { messageCreated } from './webhooks/event-data.js';
import { PeerUnreachable, type PeerClient } from '../cluster/peer-client.js';
import type { ProcessRegistry } from '../cluster/process-registry.js';
import type { Fence, LeaseOwner } from '../store/records.js';
import { Placement, type Route } from './placement/placement.js';
import { NotOwner, RemoteTurns, type ForwardedChat } from './placement/remote-turns.js';

/** A visitor message for an agent (the validated chat request body). */
export interface ChatInput {
  message: string;
  conversation_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** Public chat only: the visitor token of `conversation_id` (API.md "Chat": required with it). */
  visitor_token?: string | undefined;
  /**
   * The client's stop before it knows the turn (a socket's `cancel` frame sent right after its `message`
   * frame, while the turn is still being set up): aborting it cancels the turn as soon as the turn exists,
   * exactly as a cancel of the turn would (it ends with `done` / `cancelled`).
   */
  signal?: AbortSignal | undefined;
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
export type ChatChannel = 'api' | { publicKey: string };

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
  /** Cap on the memory of the replay of all finished turns together, bytes (PARLEY_TURN_REPLAY_BYTES; default 64 MiB). */
  replayBudgetBytes?: number;
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
  /**
   * Several processes on one store (DESIGN.md "Several processes"): this process's identity, how long a
   * conversation lease lasts (ms), the neighbours, and the client of their internal routes. Without
   * `cluster` the process still takes leases (a default identity), and never forwards.
   */
  cluster?: { self: LeaseOwner; leaseMs: number; registry?: ProcessRegistry | undefined; peers?: PeerClient | undefined };
}

/** The error stored on a turn cut short by a process that stopped or lost its conversation (API.md "Chat": code `interrupted`). */
export const INTERRUPTED = {
  type: 'api_error', code: 'interrupted',
  message: 'The server stopped during this turn, so the reply was not finished; send the message again.',
} as const;

/** Internal requests per conversation request at most: a forwarded one that finds the owner moved is routed again. */
const MAX_HOPS = 3;

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
  /** Who owns which conversation (src/runtime/placement/placement.ts). */
  readonly placement: Placement;
  /** Turns running on other processes, as mirrors (src/runtime/placement/remote-turns.ts). */
  readonly remote: RemoteTurns | undefined;
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
      maxRetainedBytes: opts.replayBudgetBytes ?? 64 * 1024 * 1024,
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
      onUnloaded: (id) => this.placement.release(id),
    });
    const cluster = opts.cluster ?? { self: { id: `proc_${process.pid}`, url: 'http://127.0.0.1' }, leaseMs: 10_000 };
    this.placement = new Placement({
      store: opts.store, self: cluster.self, registry: cluster.registry, leaseMs: cluster.leaseMs, logger: opts.logger,
      recover: (conversationId, fence) => this.recoverCutTurns(conversationId, fence),
      lost: (conversationId) => this.lostConversation(conversationId),
      loaded: (conversationId) => this.supervisor.peek(conversationId) !== undefined,
    });
    this.remote = cluster.peers === undefined ? undefined
      : new RemoteTurns(cluster.peers, { replayMs: opts.turnReplayMs, maxChars: opts.turnReplayMaxChars ?? 1024 * 1024, logger: opts.logger });
    this.control = new ConversationControl({
      store: opts.store, bus: opts.bus, logger: opts.logger, live, supervisor: this.supervisor, turns: this.turns, runner: runnerDeps,
      outbox: this.outbox, onOwner: (id, local, remote, hereOnly) => this.onOwner(id, local, remote, hereOnly), peers: cluster.peers,
      mirror: (turnId) => this.remote?.get(turnId),
      stopConversation: (id, reason) => this.stopConversation(id, reason),
      erased: (_orgId, id) => this.conversationErased(id),
    });
  }

  /**
   * Accepts a visitor message for agent `agentId` of `orgId` and returns the turn's channel once the
   * message is durable; its first event (`conversation`) is already emitted and the turn may already be
   * streaming into it, or even have ended. The caller is the turn's own client: it reads the channel with
   * `subscribeOrigin` (every event, whatever the replay budget did meanwhile), or calls `releaseOrigin`
   * when it will not read it. Admission control runs first, before any other work. Throws AppError:
   * `overloaded` (503, Retry-After), `shutting_down`, `not_found` (unknown agent, unknown conversation or
   * one of another agent), `conversation_closed`, `turn_in_progress` (queue full), `unknown_provider`
   * (the agent's provider is not configured), or what the store throws when the message cannot be stored.
   *
   * `via: {publicKey}` (a visitor of a published agent, through that key): a new conversation gets a visitor
   * token (`vt_...`, stored as its SHA-256 hash in the conversation record with the key, so still one
   * write; the token works through that key only: visitorTokenMatches) that the `conversation`
   * event carries as `visitor_token`; continuing a conversation needs its visitor token in `input`, and a
   * missing or wrong one, or a conversation that was not started publicly, is `not_found` (404: whether
   * the conversation exists is not told).
   */
  async send(orgId: string, agentId: string, input: ChatInput, via: ChatChannel = 'api', options: SendOptions = NO_OPTIONS): Promise<TurnChannel> {
    if (this.draining) throw new AppError('shutting_down', 'The server is shutting down; retry on another instance.');
    const arrivedAt = options.arrivedAt ?? performance.now();
    if (input.conversation_id === undefined) return this.admitted(orgId, agentId, input, via, undefined, arrivedAt, options);
    // A conversation that goes on: checked here (reads work on every process), then run where it is owned.
    const existing = await this.opts.store.conversations.get(orgId, input.conversation_id);
    if (!existing || existing.agent_id !== agentId) throw new AppError('not_found', 'No such conversation.');
    if (via !== 'api' && !visitorTokenMatches(existing, input.visitor_token, via.publicKey)) throw new AppError('not_found', 'No such conversation.');
    return this.onOwner(existing.id,
      (fence) => this.admitted(orgId, agentId, input, via, { conversation: existing, fence }, arrivedAt, options),
      async (url) => {
        const mirror = await this.remote!.send(url, {
          org_id: orgId, agent_id: agentId, via,
          input: { message: input.message, conversation_id: input.conversation_id, metadata: input.metadata, visitor_token: input.visitor_token },
          // The owner counts the turn's timing from this request's arrival here (clocks of two processes differ).
          elapsed_ms: performance.now() - arrivedAt,
          ...(options.clientInstructions ? { client_instructions: options.clientInstructions } : {}),
        });
        // A stop the client sent before it knew the turn (ChatInput.signal) reaches the owner as a cancel.
        if (input.signal !== undefined) cancelRemoteOnAbort(this.control, mirror, input.signal, this.opts.logger);
        return mirror;
      },
      options.hereOnly === true);
  }

  /** `accept` under an admission slot (admission control first, before any other work). */
  private async admitted(
    orgId: string, agentId: string, input: ChatInput, via: ChatChannel, owned: Owned | undefined, arrivedAt: number, options: TurnOptions,
  ): Promise<TurnChannel> {
    const slot = this.admission.acquire();
    const release = typeof slot === 'function' ? slot : await slot;
    try {
      return await this.accept(orgId, agentId, input, release, via, owned, arrivedAt, options);
    } catch (err) {
      release();
      throw err;
    }
  }

  /**
   * Runs `local` with the conversation's fence when this process owns `conversationId` (taking it when it
   * is free: Placement.route), else `remote` with the owner's address, routing again when the owner moved
   * (NotOwner) or does not answer (taken over here when it is dead or its lease expired; else 503
   * `overloaded` with Retry-After until its lease ends). `hereOnly` (a request forwarded to this process):
   * never forwards again, throws NotOwner instead.
   */
  async onOwner<T>(conversationId: string, local: (fence: Fence) => Promise<T>, remote: (url: string) => Promise<T>, hereOnly = false): Promise<T> {
    let route: Route = await this.placement.route(conversationId);
    for (let hop = 0; ; hop++) {
      if (route.kind === 'local') return local(route.fence);
      if (hereOnly) throw new NotOwner();
      if (this.remote === undefined) throw new AppError('internal_error', 'Another process owns this conversation, and this process cannot reach it.');
      try {
        return await remote(route.url);
      } catch (err) {
        if (hop + 1 >= MAX_HOPS) throw err instanceof NotOwner || err instanceof PeerUnreachable ? unavailable(route) : err;
        if (err instanceof NotOwner) {
          route = await this.placement.route(conversationId);
        } else if (err instanceof PeerUnreachable) {
          const next = await this.placement.ownerUnreachable(conversationId, route);
          if (next === undefined) throw unavailable(route);
          route = next;
        } else {
          throw err;
        }
      }
    }
  }

  private async accept(
    orgId: string, agentId: string, input: ChatInput, release: Release, via: ChatChannel, owned: Owned | undefined, arrivedAt: number, options: TurnOptions,
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
    let fence: Fence;
    /** A new conversation's imported history (TurnOptions.history), stored before its first message. */
    let earlier: MessageRecord[] | undefined;
    const isNew = input.conversation_id === undefined;
    if (isNew) {
      // A new conversation's actor always takes its first turn: the commit of the conversation and its
      // first message leaves first, so it overlaps everything below and the model call.
      let tokenHash: string | null = null;
      if (via !== 'api') {
        visitorToken = newOpaqueToken('vt');
        tokenHash = hashOpaqueToken(visitorToken);
      }
      conversation = {
        id: newId('conv'), org_id: orgId, agent_id: agent.id, status: 'active', metadata: input.metadata ?? {},
        visitor_token_hash: tokenHash, public_key: via === 'api' ? null : via.publicKey, created_at: now, updated_at: now,
      };
      if (options.history !== undefined && options.history.length > 0) earlier = historyRecords(conversation.id, orgId, options.history, now);
      message = visitorMessage(conversation.id);
      // Webhook events go in the same commit (the outbox); `events` is undefined (no cost) without an endpoint.
      events = this.outbox.wants(orgId) ? this.outbox.events(orgId, [
        { type: 'conversation.created', data: { conversation_id: conversation.id, agent_id: agent.id, metadata: conversation.metadata, created_at: now } },
        ...(earlier ?? []).map((m) => messageCreated(m, agent.id)),
        messageCreated(message, agent.id),
      ], now) : undefined;
      // The conversation's first lease (this process owns what it creates) goes in the same commit.
      const lease = this.placement.newLease();
      fence = this.placement.adopt(conversation.id, lease.until);
      stored = store.conversations.start(conversation, message, events, { lease, earlier });
      stored.catch(() => {});
    } else {
      conversation = owned!.conversation;
      fence = owned!.fence;
      const acquired = this.supervisor.acquire(conversation);
      actor = acquired instanceof Promise ? await acquired : acquired;
      const status = actor.getSnapshot().context.status;
      if (status === 'closed') throw new AppError('conversation_closed', 'This conversation is closed.');
      // A person was asked for or answers: the message goes to them, not to the agent.
      if (status !== 'active') return this.forward(conversation, { ...visitorMessage(conversation.id), turn_id: null }, turnId, release, fence);
      message = visitorMessage(conversation.id);
      stored = Promise.resolve(); // appended below, once the actor said it takes the turn
    }

    // From here to `turn.requested` nothing awaits, so the place is taken before any other request runs.
    const turn = new Turn({
      id: turnId, conversationId: conversation.id, orgId, agent, visitorMessageId: message.id, question: input.message,
      newConversation: isNew, channel: this.turns.channelFor(turnId, conversation.id, orgId),
      releaseSetup: release, fence, arrivedAt,
      ...(earlier !== undefined ? { seedHistory: earlier } : {}),
      ...(options.clientInstructions ? { clientInstructions: options.clientInstructions } : {}),
    });
    if (input.signal !== undefined) cancelOnAbort(turn, input.signal);
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
      stored = store.conversations.appendMessage(message, events, fence);
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
      if (isNew) this.placement.forget(conversation.id);
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
  private async forward(conversation: ConversationRecord, message: MessageRecord, turnId: string, release: Release, fence: Fence): Promise<TurnChannel> {
    release();
    const channel = new TurnChannel(turnId, conversation.id, conversation.org_id, { maxChars: 64 * 1024 });
    channel.emit({ type: 'conversation', conversation_id: conversation.id, turn_id: turnId });
    const events = this.outbox.events(conversation.org_id, [messageCreated(message, conversation.agent_id)], message.created_at);
    await this.opts.store.conversations.appendMessage(message, events, fence);
    this.outbox.committed(events);
    channel.emit({ type: 'message', message_id: message.id });
    channel.emit({ type: 'done', finish_reason: 'handoff' });
    this.opts.bus.publish({ type: 'message.created', org_id: conversation.org_id, data: { conversation_id: conversation.id, message_id: message.id, role: 'visitor' } });
    this.live.messageCreated(message);
    return channel;
  }

  /**
   * The turns of a conversation that have not ended, running one first, then the queued ones in order
   * (for a listen-only socket that joins while they run): this process's when it runs the conversation,
   * else mirrors of the owner's (src/runtime/placement/remote-turns.ts). Empty when nobody has its actor
   * loaded, or the owner cannot be reached.
   */
  async pendingTurns(conversationId: string): Promise<TurnChannel[]> {
    const local = this.localPendingTurns(conversationId);
    if (local !== undefined || this.remote === undefined) return local ?? [];
    const lease = await this.opts.store.leases.get(conversationId);
    if (lease === undefined || lease.owner_id === this.placement.self.id || lease.released) return [];
    try {
      const answer = await this.opts.cluster!.peers!.request(lease.owner_url, 'GET', `/internal/v1/conversations/${encodeURIComponent(conversationId)}/turns`);
      const turns = answer.status === 200 ? (answer.body as { turn_ids: string[]; org_id: string }) : undefined;
      if (turns === undefined) return [];
      const out: TurnChannel[] = [];
      for (const id of turns.turn_ids) {
        const ch = await this.remote.follow(lease.owner_url, turns.org_id, id);
        if (ch !== undefined && !ch.ended) out.push(ch);
      }
      return out;
    } catch (err) {
      this.opts.logger.warn({ err, conversation_id: conversationId }, 'could not read the running turns of a conversation owned by another process');
      return [];
    }
  }

  /** The turns of a conversation this process runs (see pendingTurns); undefined when its actor is not loaded here. */
  localPendingTurns(conversationId: string): TurnChannel[] | undefined {
    const context = this.supervisor.peek(conversationId)?.getSnapshot().context;
    if (context === undefined) return undefined;
    const out: TurnChannel[] = [];
    if (context.active !== null) out.push((context.active as unknown as Turn).channel);
    for (const t of context.queue) out.push((t as unknown as Turn).channel);
    return out;
  }

  /** The channel of a turn run by this process (running or kept for replay), or undefined: the internal stream route. */
  localChannel(turnId: string): TurnChannel | undefined {
    const channel = this.turns.channel(turnId);
    return channel?.isReplayable === true ? channel : undefined;
  }

  /**
   * The channel of a running or recently finished turn of `orgId`'s conversation, for resume, wherever it
   * runs (here; else a mirror of the process that ran it). Throws AppError `not_found` when there is no
   * such turn or its events are no longer kept (the client then fetches the stored messages).
   */
  async replay(orgId: string, conversationId: string, turnId: string): Promise<TurnChannel> {
    const channel = await this.findTurn(orgId, turnId, conversationId);
    if (!channel || channel.conversationId !== conversationId) throw turnGone();
    return channel;
  }

  /**
   * The channel of a running or recently finished turn of `orgId` (any conversation), for a socket's
   * `resume` frame, wherever it runs. Throws AppError `not_found` like `replay`.
   */
  async turnChannel(orgId: string, turnId: string): Promise<TurnChannel> {
    const channel = await this.findTurn(orgId, turnId, undefined);
    if (!channel) throw turnGone();
    return channel;
  }

  /**
   * A replayable turn channel of `orgId`: this process's own, a mirror it already has, or a mirror of the
   * process that ran it: the conversation's owner first (when known), then every other live process.
   */
  private async findTurn(orgId: string, turnId: string, conversationId: string | undefined): Promise<TurnChannel | undefined> {
    const here = this.turns.channel(turnId) ?? this.remote?.get(turnId);
    if (here !== undefined) return here.orgId === orgId && here.isReplayable ? here : undefined;
    if (this.remote === undefined) return undefined;
    const urls: string[] = [];
    if (conversationId !== undefined) {
      const lease = await this.opts.store.leases.get(conversationId);
      if (lease !== undefined && lease.owner_id !== this.placement.self.id) urls.push(lease.owner_url);
    }
    for (const p of this.opts.cluster?.registry?.neighbours ?? []) if (!urls.includes(p.url)) urls.push(p.url);
    for (const url of urls) {
      try {
        const ch = await this.remote.follow(url, orgId, turnId);
        if (ch !== undefined) return ch.orgId === orgId && ch.isReplayable ? ch : undefined;
      } catch (err) {
        this.opts.logger.debug({ err, url, turn_id: turnId }, 'a neighbour did not answer for a turn');
      }
    }
    return undefined;
  }

  /**
   * Stops what this process runs of a conversation being erased: its turns are aborted with `reason`
   * (their streams end with that error; their writes are refused once the erasure ended the lease), its
   * actor is dropped without releasing the lease (the erasure is a fenced write), and no turn of it stays
   * replayable.
   */
  private stopConversation(conversationId: string, reason: AppError): void {
    this.turns.dropConversation(conversationId);
    for (const turn of this.turns.all()) if (turn.conversationId === conversationId) turn.abort(reason);
    this.supervisor.evict(conversationId);
  }

  /**
   * A conversation was erased (here, or on another process: the feed's `erased` entry): its lease is
   * forgotten, mirrors of its turns and their replay dropped, and every socket following it closes with
   * 4404 `erased`.
   */
  conversationErased(conversationId: string): void {
    this.placement.forget(conversationId);
    this.turns.dropConversation(conversationId);
    this.remote?.dropConversation(conversationId);
    this.live.accessChanged(conversationKey(conversationId), { kind: 'ended', reason: 'erased' });
  }

  /** Aborts the running turns of a conversation whose actor crashed: each ends with a stored failed reply. */
  private failTurnsOf(conversationId: string): void {
    for (const turn of this.turns.all()) {
      if (turn.conversationId === conversationId) turn.abort(new AppError('internal_error', 'The conversation failed; send the message again.'));
    }
  }

  /**
   * This process lost the lease of `conversationId` (it stalled past the expiry): its actor is dropped and
   * its running turns aborted; their writes are refused (`lease_lost`) and the process that took the
   * conversation over stores them as interrupted.
   */
  private lostConversation(conversationId: string): void {
    this.supervisor.evict(conversationId);
    for (const turn of this.turns.all()) {
      if (turn.conversationId === conversationId) turn.abort(new AppError('interrupted', 'This server lost the conversation to another process during the turn; fetch the messages.'));
    }
  }

  /**
   * Stores the cut turns of a conversation this process just took over (Placement: its owner died or
   * stalled): each gets a `failed` agent reply with code `interrupted`, with its `message.created` event,
   * fenced by the new fence. Never rejects (a failure is logged; the sweep tries again later).
   */
  private async recoverCutTurns(conversationId: string, fence: Fence): Promise<void> {
    const at = new Date().toISOString();
    const events: StoredEvent[] = [];
    try {
      const cut = await this.opts.store.conversations.failInterruptedTurns(INTERRUPTED, at, ({ message, agent_id }) => {
        const stored = this.outbox.events(message.org_id, [messageCreated(message, agent_id)], at);
        if (stored !== undefined) events.push(...stored);
        return stored;
      }, { conversationId, fence });
      this.outbox.committed(events);
      if (cut.length > 0) this.opts.logger.warn({ conversation_id: conversationId, turns: cut.length }, 'turns cut short by a process that stopped stored as failed (interrupted)');
    } catch (err) {
      this.opts.logger.error({ err, conversation_id: conversationId }, 'could not store the cut turns of a conversation taken over');
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
    await this.placement.stop();
    this.remote?.close();
    this.turns.close();
    this.admission.close();
  }

  get isDraining(): boolean {
    return this.draining;
  }
}

const NO_OPTIONS: SendOptions = {};

/**
 * ChatService.send's options: the turn's (TurnOptions), and `hereOnly`: the request was forwarded to this
 * process by another (src/transport/http/routes/internal.ts), so it never forwards again (NotOwner instead).
 */
export interface SendOptions extends TurnOptions {
  hereOnly?: boolean;
}

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

/** A conversation this process owns, with the fence its writes carry. */
interface Owned {
  conversation: ConversationRecord;
  fence: Fence;
}

const turnGone = () => new AppError('not_found', 'No such turn, or its events are no longer kept; fetch the conversation messages instead.');

/** The owner of a conversation does not answer and is not known dead: retry once its lease may have ended. */
function unavailable(route: Route): AppError {
  const wait = route.kind === 'remote' ? Math.max(1, Math.ceil((Date.parse(route.expiresAt) - Date.now()) / 1000)) : 1;
  return new AppError('overloaded', 'The Parley process that runs this conversation is not answering; retry shortly.', { headers: { 'Retry-After': String(wait) } });
}

/**
 * Cancels `turn` (as a client's cancel: it ends `cancelled`) when `signal` aborts, at once if it already
 * has. A queued or not yet started turn stops before it calls the model.
 */
function cancelOnAbort(turn: Turn, signal: AbortSignal): void {
  if (signal.aborted) turn.cancel('client');
  else signal.addEventListener('abort', () => turn.cancel('client'), { once: true });
}

/** The same, for a turn run by another process (its mirror here): the cancel is forwarded to the owner. */
function cancelRemoteOnAbort(control: ConversationControl, mirror: TurnChannel, signal: AbortSignal, logger: Logger): void {
  const cancel = () => {
    if (mirror.ended) return;
    control.cancelTurn(mirror.orgId, mirror.conversationId, mirror.turnId)
      .catch((err: unknown) => logger.warn({ err, turn_id: mirror.turnId }, 'could not forward a cancel to the owner of the turn'));
  };
  if (signal.aborted) cancel();
  else signal.addEventListener('abort', cancel, { once: true });
}

/**
 * True when `token` is the visitor token of `conversation` (SHA-256 compared in constant time) and the
 * request came through `publicKey`, the key the conversation was started through: a visitor token ends
 * with its agent's publication (an unpublish drops the key; a new publish makes another one).
 */
export function visitorTokenMatches(conversation: ConversationRecord, token: string | undefined, publicKey: string): boolean {
  if (conversation.visitor_token_hash === null || token === undefined || !isOpaqueToken(token, 'vt')) return false;
  if (conversation.public_key == null || conversation.public_key !== publicKey) return false;
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
