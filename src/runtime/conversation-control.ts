import type { ConversationEvent, HandoffRequester } from '../../actors/conversation/conversation.types.js';
import { AppError } from '../errors/app-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { EventSpec, Outbox } from '../events/outbox.js';
import { newId } from '../ids/ids.js';
import type { Logger } from '../log/logger.js';
import type { PeerClient } from '../cluster/peer-client.js';
import type { Store } from '../store/ports.js';
import type { ConversationRecord, Fence, MessageRecord } from '../store/records.js';
import { errorFrom, NotOwner } from './placement/remote-turns.js';
import type { TurnChannel } from './turn/turn-channel.js';
import type { ConversationStatus } from '../vocabulary/conversation.js';
import type { LiveHub } from './live/live-hub.js';
import type { ConversationActor, Supervisor } from './supervisor.js';
import type { TurnRegistry } from './turn/turn-registry.js';
import { closeQueuedTurn, forwardQueuedTurn, type TurnRunnerDeps } from './turn/turn-runner.js';
import type { Turn } from './turn/turn.js';
import { messageCreated } from './webhooks/event-data.js';

/** What ConversationControl works with (the ChatService's parts). */
export interface ConversationControlDeps {
  store: Store;
  bus: EventBus;
  logger: Logger;
  live: LiveHub;
  supervisor: Supervisor;
  turns: TurnRegistry;
  runner: TurnRunnerDeps;
  /** The webhook outbox: events of a change are stored in its commit. */
  outbox: Outbox;
  /**
   * Runs `local` (with the fence) where the conversation is owned here, else `remote` at the owner
   * (ChatService.onOwner: DESIGN.md "Several processes").
   */
  onOwner: <T>(conversationId: string, local: (fence: Fence) => Promise<T>, remote: (url: string) => Promise<T>, hereOnly?: boolean) => Promise<T>;
  /** The client of the neighbours' internal routes (undefined: a single process, nothing to forward to). */
  peers?: PeerClient | undefined;
  /** A mirror of a turn run by another process, if this process has one. */
  mirror: (turnId: string) => TurnChannel | undefined;
  /**
   * Stops everything this process runs or keeps of a conversation being erased: its turns aborted with
   * `reason`, its actor dropped (lease untouched), its turns' replay dropped.
   */
  stopConversation: (conversationId: string, reason: AppError) => void;
  /** After an erasure committed: the lease forgotten here, sockets following the conversation closed (4404). */
  erased: (orgId: string, conversationId: string) => void;
}

/**
 * One change of a conversation, as it travels to the process that owns it
 * (`POST /internal/v1/conversations/{conversation_id}/control`, src/transport/http/routes/internal.ts).
 */
export type ControlOp =
  | { op: 'handoff'; by: HandoffRequester; reason?: string | undefined; turnId?: string | undefined }
  | { op: 'takeover' }
  | { op: 'resolve' }
  | { op: 'close' }
  | { op: 'operator_message'; content: string }
  | { op: 'cancel'; turnId: string }
  | { op: 'erase' };

/** The internal control route of a conversation. */
export const internalControlPath = (conversationId: string): string => `/internal/v1/conversations/${encodeURIComponent(conversationId)}/control`;

/** The outcome of a status change: the conversation as it is now, and whether this call changed it. */
export interface StatusChange {
  conversation: ConversationRecord;
  changed: boolean;
}

/** How a cancel went: the turn is being stopped, or it had already ended (its events are still kept). */
export type CancelOutcome = 'cancelling' | 'finished';

/**
 * What operators, visitors and the agent do to a conversation besides chatting (API.md "Conversations
 * and handoff", "Chat" Stop): ask for a person, take over, hand back, close, post an operator message,
 * stop a turn. The conversation machine (actors/conversation/) decides every status change; this class
 * does the I/O around it, in this order: the event goes to the actor (a synchronous decision, so of two
 * concurrent changes one wins and the store sees them in the same order), the new status is stored
 * (conversations.setStatus), then the change is told: domain event (`handoff.requested`,
 * `handoff.accepted`, `handoff.resolved`, `conversation.closed`), live subscribers, and the HTTP answer.
 * If the write fails, the actor is dropped so that the next request rehydrates it from the store.
 *
 * A change that would not change anything (a takeover of a conversation already handed off, a resolve of
 * an active one) changes nothing and is not an error (`changed: false`); any change but `close` of a
 * closed conversation is 409 `conversation_closed`.
 */
export class ConversationControl {
  constructor(private readonly deps: ConversationControlDeps) {}

  /**
   * `active -> pending_handoff` (`handoff.requested`, with `reason` and `requested_by`). `by: 'agent'`
   * with `turnId` is the agent's `handoff_to_human` tool: that turn goes on and ends with finish reason
   * `handoff`; otherwise a running turn is stopped (`done` / `handoff`, its partial reply stored). Queued
   * messages are forwarded to the operators. Throws AppError `not_found`, `conversation_closed`, or what
   * the store throws.
   */
  requestHandoff(orgId: string, conversationId: string, opts: { by: HandoffRequester; reason?: string | undefined; turnId?: string }): Promise<ConversationRecord> {
    return this.perform(orgId, conversationId, { op: 'handoff', ...opts }) as Promise<ConversationRecord>;
  }

  /** `active | pending_handoff -> handed_off` (`handoff.accepted`): a person answers. Throws like requestHandoff. */
  takeover(orgId: string, conversationId: string): Promise<ConversationRecord> {
    return this.perform(orgId, conversationId, { op: 'takeover' }) as Promise<ConversationRecord>;
  }

  /** `pending_handoff | handed_off -> active` (`handoff.resolved`): the agent answers again. Throws like requestHandoff. */
  resolve(orgId: string, conversationId: string): Promise<ConversationRecord> {
    return this.perform(orgId, conversationId, { op: 'resolve' }) as Promise<ConversationRecord>;
  }

  /**
   * Any status -> `closed` (`conversation.closed`): a running turn stops (`done` / `cancelled`, partial
   * reply stored), queued ones fail with `conversation_closed`, and every later message gets 409. Closing
   * a closed conversation changes nothing. Throws AppError `not_found` or what the store throws.
   */
  close(orgId: string, conversationId: string): Promise<ConversationRecord> {
    return this.perform(orgId, conversationId, { op: 'close' }) as Promise<ConversationRecord>;
  }

  /**
   * Stores an operator message (role `operator`, no turn) and pushes it to every live subscriber of the
   * conversation: visitor sockets get `token` (the whole text), `message`, `done`, each with `role:
   * operator` (API.md "WebSockets"); `message.created` goes on the bus. Allowed in any status but
   * `closed` (409 `conversation_closed`); it does not change the status (take over for that). Throws
   * AppError `not_found` or what the store throws.
   */
  postOperatorMessage(orgId: string, conversationId: string, content: string): Promise<MessageRecord> {
    return this.perform(orgId, conversationId, { op: 'operator_message', content }) as Promise<MessageRecord>;
  }

  /**
   * Stops turn `turnId` of conversation `conversationId` of `orgId` (API.md "Chat" Stop): the model call
   * is aborted, the partial text stored as the agent message, and the stream ends with `done` /
   * `cancelled`. A queued turn is stopped before it starts (its reply is empty). `finished` when the
   * turn had already ended and its events are still kept. Throws AppError `not_found` otherwise.
   */
  async cancelTurn(orgId: string, conversationId: string, turnId: string): Promise<CancelOutcome> {
    const local = this.cancelHere(orgId, conversationId, turnId);
    if (local !== undefined) return local;
    const mirror = this.deps.mirror(turnId);
    if (mirror !== undefined && mirror.ended && mirror.orgId === orgId && mirror.conversationId === conversationId) return 'finished';
    return this.perform(orgId, conversationId, { op: 'cancel', turnId }) as Promise<CancelOutcome>;
  }

  /**
   * Erases the conversation (API.md "Conversations and handoff": DELETE /v1/conversations/{id}), on the
   * process that owns it: its running turns are aborted (streams end with `error` / `not_found`; their late
   * writes are refused, since the erasure ends the lease), its actor and the replay of its turns are
   * dropped, then the store erases it (ConversationsPort.erase: messages, tool runs, the text of its webhook
   * events and of their receivers' responses; usage totals stay) with its `conversation.deleted` event in the
   * same commit, and the sockets following it close with 4404 `erased` (on every process, through the feed).
   * Throws AppError `not_found` when `orgId` has no such conversation, or what the store throws.
   */
  async erase(orgId: string, conversationId: string): Promise<void> {
    await this.perform(orgId, conversationId, { op: 'erase' });
  }

  /**
   * Runs `op` on the conversation where it is owned (here, or forwarded to the owner). `hereOnly`: a
   * request forwarded to this process: NotOwner when it does not own the conversation.
   */
  perform(orgId: string, conversationId: string, op: ControlOp, hereOnly = false): Promise<unknown> {
    return this.deps.onOwner(conversationId, (fence) => this.here(orgId, conversationId, op, fence), (url) => this.forwardTo(url, orgId, conversationId, op), hereOnly);
  }

  private here(orgId: string, conversationId: string, op: ControlOp, fence: Fence): Promise<unknown> {
    switch (op.op) {
      case 'handoff': return this.handoffHere(orgId, conversationId, op, fence);
      case 'takeover': return this.takeoverHere(orgId, conversationId, fence);
      case 'resolve': return this.resolveHere(orgId, conversationId, fence);
      case 'close': return this.closeHere(orgId, conversationId, fence);
      case 'operator_message': return this.operatorMessageHere(orgId, conversationId, op.content, fence);
      case 'erase': return this.eraseHere(orgId, conversationId, fence);
      case 'cancel': {
        const outcome = this.cancelHere(orgId, conversationId, op.turnId);
        if (outcome === undefined) throw new AppError('not_found', 'No such turn, or it ended too long ago.');
        return Promise.resolve(outcome);
      }
    }
  }

  private async forwardTo(url: string, orgId: string, conversationId: string, op: ControlOp): Promise<unknown> {
    const answer = await this.deps.peers!.request(url, 'POST', internalControlPath(conversationId), { org_id: orgId, op });
    if (answer.status === 421) throw new NotOwner();
    if (answer.status !== 200) throw errorFrom(answer.status, answer.body, answer.retryAfter);
    return (answer.body as { result: unknown }).result;
  }

  private handoffHere(orgId: string, conversationId: string, opts: { by: HandoffRequester; reason?: string | undefined; turnId?: string | undefined }, fence: Fence): Promise<ConversationRecord> {
    const event: ConversationEvent = { type: 'handoff.request', by: opts.by, ...(opts.turnId === undefined ? {} : { turnId: opts.turnId }) };
    const spec = (c: ConversationRecord): EventSpec => ({
      type: 'handoff.requested', data: { conversation_id: c.id, agent_id: c.agent_id, reason: opts.reason ?? null, requested_by: opts.by },
    });
    return this.change(orgId, conversationId, event, 'pending_handoff', spec, (c) => {
      this.deps.bus.publish({
        type: 'handoff.requested', org_id: orgId,
        data: { conversation_id: c.id, agent_id: c.agent_id, reason: opts.reason ?? null, requested_by: opts.by },
      });
    }, fence).then((r) => r.conversation);
  }

  private async takeoverHere(orgId: string, conversationId: string, fence: Fence): Promise<ConversationRecord> {
    const r = await this.change(orgId, conversationId, { type: 'handoff.takeover' }, 'handed_off', undefined, (c) => {
      this.deps.bus.publish({ type: 'handoff.accepted', org_id: orgId, data: { conversation_id: c.id, agent_id: c.agent_id } });
    }, fence);
    return r.conversation;
  }

  private async resolveHere(orgId: string, conversationId: string, fence: Fence): Promise<ConversationRecord> {
    const spec = (c: ConversationRecord): EventSpec => ({ type: 'handoff.resolved', data: { conversation_id: c.id, agent_id: c.agent_id } });
    const r = await this.change(orgId, conversationId, { type: 'handoff.resolve' }, 'active', spec, (c) => {
      this.deps.bus.publish({ type: 'handoff.resolved', org_id: orgId, data: { conversation_id: c.id, agent_id: c.agent_id } });
    }, fence);
    return r.conversation;
  }

  private async closeHere(orgId: string, conversationId: string, fence: Fence): Promise<ConversationRecord> {
    const spec = (c: ConversationRecord): EventSpec => ({ type: 'conversation.closed', data: { conversation_id: c.id, agent_id: c.agent_id } });
    const r = await this.change(orgId, conversationId, { type: 'conversation.close' }, 'closed', spec, (c) => {
      this.deps.bus.publish({ type: 'conversation.closed', org_id: orgId, data: { conversation_id: c.id, agent_id: c.agent_id } });
    }, fence);
    return r.conversation;
  }

  private async operatorMessageHere(orgId: string, conversationId: string, content: string, fence: Fence): Promise<MessageRecord> {
    const conversation = await this.conversation(orgId, conversationId);
    const actor = await this.actor(conversation);
    if (actor.getSnapshot().context.status === 'closed') throw new AppError('conversation_closed', 'This conversation is closed.');
    const message: MessageRecord = {
      id: newId('msg'), conversation_id: conversation.id, org_id: orgId, turn_id: null, role: 'operator', content,
      citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: new Date().toISOString(),
    };
    const events = this.deps.outbox.events(orgId, [messageCreated(message, conversation.agent_id)], message.created_at);
    await this.deps.store.conversations.appendMessage(message, events, fence);
    this.deps.outbox.committed(events);
    this.deps.bus.publish({ type: 'message.created', org_id: orgId, data: { conversation_id: conversation.id, message_id: message.id, role: 'operator' } });
    this.deps.live.messageCreated(message);
    return message;
  }

  private async eraseHere(orgId: string, conversationId: string, fence: Fence): Promise<null> {
    const conversation = await this.conversation(orgId, conversationId);
    this.deps.stopConversation(conversationId, new AppError('not_found', 'This conversation was erased.'));
    const at = new Date().toISOString();
    const data = { conversation_id: conversation.id, agent_id: conversation.agent_id };
    const events = this.deps.outbox.events(orgId, [{ type: 'conversation.deleted', data }], at);
    if (!await this.deps.store.conversations.erase(orgId, conversationId, at, events, fence)) throw new AppError('not_found', 'No such conversation.');
    this.deps.outbox.committed(events);
    this.deps.erased(orgId, conversationId);
    this.deps.bus.publish({ type: 'conversation.deleted', org_id: orgId, data });
    this.deps.logger.info({ conversation_id: conversationId, org_id: orgId }, 'conversation erased');
    return null;
  }

  /** Cancels a turn this process runs or ran (see cancelTurn); undefined when it knows no such turn. */
  private cancelHere(orgId: string, conversationId: string, turnId: string): CancelOutcome | undefined {
    const turn = this.deps.turns.get(turnId);
    if (turn !== undefined && turn.orgId === orgId && turn.conversationId === conversationId) {
      const actor = this.deps.supervisor.peek(conversationId);
      if (actor?.getSnapshot().context.active?.id === turnId) actor.send({ type: 'turn.cancel', turnId });
      else turn.cancel('client');
      return 'cancelling';
    }
    const channel = this.deps.turns.channel(turnId);
    if (channel !== undefined && channel.orgId === orgId && channel.conversationId === conversationId) return 'finished';
    return undefined;
  }

  private async conversation(orgId: string, conversationId: string): Promise<ConversationRecord> {
    const c = await this.deps.store.conversations.get(orgId, conversationId);
    if (c === undefined) throw new AppError('not_found', 'No such conversation.');
    return c;
  }

  private async actor(c: ConversationRecord): Promise<ConversationActor> {
    const acquired = this.deps.supervisor.acquire(c);
    return acquired instanceof Promise ? acquired : acquired;
  }

  /**
   * One status change, as the class comment says; `spec` is its webhook event (stored in the same
   * commit as the status), `told` publishes its domain event once it is stored.
   */
  private async change(
    orgId: string, conversationId: string, event: ConversationEvent, to: ConversationStatus,
    spec: ((c: ConversationRecord) => EventSpec) | undefined, told: (c: ConversationRecord) => void, fence: Fence,
  ): Promise<StatusChange> {
    const conversation = await this.conversation(orgId, conversationId);
    const actor = await this.actor(conversation);
    const before = actor.getSnapshot();
    if (!before.can(event)) {
      const status = before.context.status;
      if (status === 'closed' && to !== 'closed') throw new AppError('conversation_closed', 'This conversation is closed.');
      return { conversation: { ...conversation, status }, changed: false };
    }
    const queued = before.context.queue as readonly unknown[] as readonly Turn[];
    actor.send(event);
    const at = new Date().toISOString();
    const events = spec === undefined ? undefined : this.deps.outbox.events(orgId, [spec(conversation)], at);
    try {
      await this.deps.store.conversations.setStatus(conversation.id, to, at, events, fence);
    } catch (err) {
      // The actor moved and the store did not: drop the actor, the next request rehydrates it from the store.
      this.deps.supervisor.evict(conversation.id);
      throw err;
    }
    this.deps.outbox.committed(events);
    const updated: ConversationRecord = { ...conversation, status: to, updated_at: at };
    // The machine dropped the queue: those messages go to the people now (or fail, when closed).
    for (const turn of queued) {
      if (to === 'closed') void closeQueuedTurn(turn, this.deps.runner);
      else void forwardQueuedTurn(turn, this.deps.runner);
    }
    told(updated);
    this.deps.live.statusChanged(orgId, conversation.id, to);
    this.deps.logger.info({ conversation_id: conversation.id, status: to, event: event.type }, 'conversation status changed');
    return { conversation: updated, changed: true };
  }
}
