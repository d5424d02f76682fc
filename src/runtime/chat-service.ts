import { conversationMachine } from '../../actors/conversation/conversation.machine.js';
import { turnMachine } from '../../actors/turn/turn.machine.js';
import { AppError } from '../errors/app-error.js';
import { newId } from '../ids/ids.js';
import type { Logger } from '../log/logger.js';
import type { ModelRegistry } from '../models/registry.js';
import type { TokenCounter } from '../models/token-counter.js';
import type { AgentRecord, ConversationRecord, Store } from '../store/ports.js';
import type { EventBus } from './event-bus.js';
import { Supervisor, type ConversationLogic } from './supervisor.js';
import { createTurnActors, type TurnActorDeps } from './turn-actors.js';
import type { TurnChannel } from './turn-channel.js';
import { TurnSessions } from './turn-sessions.js';

/** A visitor message for an agent (the validated chat request body). */
export interface ChatInput {
  message: string;
  conversation_id?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

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
  turnReplayMs: number;
  historyLimit?: number;
  onFirstToken?: TurnActorDeps['onFirstToken'];
  onTurnEnd?: TurnActorDeps['onTurnEnd'];
  /** Replaces the conversation machine (tests inject faults); default: the real one. */
  conversationLogic?: ConversationLogic;
}

/**
 * The chat runtime: turns a visitor message into a running turn and hands back its channel. Order of
 * work (DESIGN.md "One chat turn, as data"): find or create the conversation, reserve a place in its
 * queue (409 when closed or full), persist the visitor message, emit `conversation`, let the
 * conversation actor start the turn. Clients only subscribe to the channel, so a client that goes away
 * never stops the turn (SPEC.md 6.1 rule 3).
 */
export class ChatService {
  readonly sessions: TurnSessions;
  readonly supervisor: Supervisor;
  private draining = false;
  private readonly opts: ChatServiceOptions;

  constructor(opts: ChatServiceOptions) {
    this.opts = opts;
    this.sessions = new TurnSessions(opts.turnReplayMs);
    const turnLogic = turnMachine.provide({
      actors: createTurnActors({
        store: opts.store, models: opts.models, sessions: this.sessions, bus: opts.bus, logger: opts.logger, tokens: opts.tokens,
        retrievalK: opts.retrievalK, historyLimit: opts.historyLimit ?? 40,
        ...(opts.onFirstToken ? { onFirstToken: opts.onFirstToken } : {}),
        ...(opts.onTurnEnd ? { onTurnEnd: opts.onTurnEnd } : {}),
      }),
    });
    const logic = (opts.conversationLogic ?? conversationMachine).provide({ actors: { turn: turnLogic } });
    this.supervisor = new Supervisor({
      logic: logic as ConversationLogic, logger: opts.logger, maxQueued: opts.maxQueuedTurns,
      idleMs: opts.idleUnloadMs, maxSteps: opts.maxToolSteps,
      onCrash: (id) => this.failTurnsOf(id),
    });
  }

  /**
   * Accepts a visitor message for `agent` and returns the turn's channel once the message is durable;
   * its first event (`conversation`) is already emitted and the turn may already be streaming into it. Throws AppError: `not_found` (unknown conversation or one of
   * another agent), `conversation_closed`, `turn_in_progress` (queue full), `shutting_down`,
   * `unknown_provider` (the agent's provider is not configured).
   */
  async send(orgId: string, agent: AgentRecord, input: ChatInput): Promise<TurnChannel> {
    if (this.draining) throw new AppError('shutting_down', 'The server is shutting down; retry on another instance.');
    this.opts.models.get(agent.model.provider);
    const { store } = this.opts;
    let conversation: ConversationRecord | undefined;
    let created: Promise<void> | undefined;
    if (input.conversation_id !== undefined) {
      conversation = await store.conversations.get(orgId, input.conversation_id);
      if (!conversation || conversation.agent_id !== agent.id) throw new AppError('not_found', 'No such conversation.');
    } else {
      const now = new Date().toISOString();
      conversation = {
        id: newId('conv'), org_id: orgId, agent_id: agent.id, status: 'active',
        metadata: input.metadata ?? {}, created_at: now, updated_at: now,
      };
      // Not awaited here: it commits together with the visitor message below (one group commit).
      created = store.conversations.create(conversation);
      created.catch(() => {});
    }
    const actor = await this.supervisor.acquire(conversation);

    // From here to `turn.requested` nothing awaits, so the place is reserved before any other request runs.
    const turnId = newId('turn');
    const snapshot = actor.getSnapshot();
    if (!snapshot.can({ type: 'turn.requested', turnId })) {
      if (snapshot.context.status === 'closed') throw new AppError('conversation_closed', 'This conversation is closed.');
      throw new AppError('turn_in_progress', 'Too many messages are waiting for a reply in this conversation; wait for the current turn to finish.');
    }
    const visitorMessageId = newId('msg');
    const session = this.sessions.open({
      turnId, conversationId: conversation.id, orgId, agent, visitorMessageId, question: input.message,
      newConversation: created !== undefined,
    });
    session.channel.emit({ type: 'conversation', conversation_id: conversation.id, turn_id: turnId });
    actor.send({ type: 'turn.requested', turnId });
    const appended = store.conversations.appendMessage({
      id: visitorMessageId, conversation_id: conversation.id, org_id: orgId, turn_id: turnId, role: 'visitor',
      content: input.message, citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null,
      error: null, created_at: new Date().toISOString(),
    });
    // The turn may start now, so the model call overlaps the commit of the visitor message (an fsync
    // with synchronous=FULL). Nothing reaches the client before that commit: the channel, with every
    // event buffered so far, is only handed out once the message is durable.
    actor.send({ type: 'turn.accepted', turnId });
    try {
      await Promise.all([created, appended]);
    } catch (err) {
      // The message was not stored: stop the turn (it writes nothing once its session is gone).
      actor.send({ type: 'turn.withdrawn', turnId });
      this.sessions.discard(turnId);
      throw err;
    }
    if (created) this.opts.bus.publish({ type: 'conversation.created', org_id: orgId, data: { conversation_id: conversation.id, agent_id: agent.id } });
    this.opts.bus.publish({ type: 'message.created', org_id: orgId, data: { conversation_id: conversation.id, message_id: visitorMessageId, role: 'visitor' } });
    return session.channel;
  }

  /** Ends, with an `error` event, the running turns of a conversation whose actor crashed. */
  private failTurnsOf(conversationId: string): void {
    for (const s of this.sessions.all()) {
      if (s.conversationId !== conversationId) continue;
      s.abort.abort();
      s.channel.emit({ type: 'error', error: { type: 'api_error', code: 'internal_error', message: 'The conversation failed; send the message again.' } });
      this.sessions.finish(s.turnId);
    }
  }

  /**
   * Graceful drain (SIGTERM): refuse new turns, wait for running ones up to `graceMs`, then abort the
   * rest (they end with an error event and a stored failed reply). Resolves when no turn runs.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const deadline = Date.now() + graceMs;
    while (this.sessions.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    if (this.sessions.size > 0) {
      for (const s of this.sessions.all()) s.abort.abort(new AppError('shutting_down', 'The server shut down during this turn.'));
      const hard = Date.now() + 2000;
      while (this.sessions.size > 0 && Date.now() < hard) await new Promise((r) => setTimeout(r, 10));
    }
    this.supervisor.stopAll();
    this.sessions.close();
  }

  get isDraining(): boolean {
    return this.draining;
  }
}
