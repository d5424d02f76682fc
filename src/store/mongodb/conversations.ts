import type { ClientSession, Document } from 'mongodb';
import { newId } from '../../ids/ids.js';
import type { ConversationsPort } from '../ports.js';
import { ERASED_MARKER, type ConversationRecord, type Fence, type InterruptedTurn, type MessageRecord, type OutboxEvent } from '../records.js';
import { scrubEventData } from '../erasure.js';
import { toPage, unknownCursor } from '../list-page.js';
import type { MongoContext } from './context.js';
import { checkFence } from './leases.js';
import { countUsage, writeOutbox } from './outbox.js';
import { newestFirst } from './pagination.js';
import type { Collections, ConversationDoc, MessageDoc } from './schema.js';
import { recordChanges } from './transactions.js';

export const conversationToDoc = (r: ConversationRecord): ConversationDoc => ({
  _id: r.id, org_id: r.org_id, agent_id: r.agent_id, status: r.status, metadata: r.metadata, visitor_token_hash: r.visitor_token_hash,
  public_key: r.public_key ?? null, created_at: r.created_at, updated_at: r.updated_at, message_seq: 0,
});

export const conversationFromDoc = (d: ConversationDoc): ConversationRecord => ({
  id: d._id, org_id: d.org_id, agent_id: d.agent_id, status: d.status, metadata: d.metadata, visitor_token_hash: d.visitor_token_hash ?? null,
  public_key: d.public_key ?? null, created_at: d.created_at, updated_at: d.updated_at,
});

export const messageToDoc = (m: MessageRecord, seq: number): MessageDoc => {
  const { id, ...rest } = m;
  return { _id: id, ...rest, seq };
};

export const messageFromDoc = (d: MessageDoc): MessageRecord => ({
  id: d._id, conversation_id: d.conversation_id, org_id: d.org_id, turn_id: d.turn_id ?? null, role: d.role, content: d.content,
  citations: d.citations, tool_runs: d.tool_runs, usage: d.usage ?? null, status: d.status, finish_reason: d.finish_reason ?? null,
  error: d.error ?? null, timing: d.timing ?? null, created_at: d.created_at,
});

/**
 * The order of ConversationsPort.history, given `turnStart` (a turn id -> the smallest `seq` of the
 * turn's messages, whether or not they are in `docs`): a message of a turn sits at its turn's start, a
 * message of no turn at its own `seq`; at one place a visitor message comes before the others, then
 * stored order. The same order as SQLite's history query. Returns a new array.
 */
export function historyOrder(docs: readonly MessageDoc[], turnStart: ReadonlyMap<string, number>): MessageDoc[] {
  const place = (m: MessageDoc) => (m.turn_id === null ? m.seq : turnStart.get(m.turn_id) ?? m.seq);
  return [...docs].sort((a, b) => {
    const d = place(a) - place(b);
    if (d !== 0) return d;
    const ar = a.role === 'visitor' ? 0 : 1;
    const br = b.role === 'visitor' ? 0 : 1;
    return ar !== br ? ar - br : a.seq - b.seq;
  });
}

/**
 * Where each turn of `docs` starts (its smallest `seq`): read from the window itself for a turn whose
 * visitor message is in it (stored first, it is the turn's start), and with one query for the others
 * (a turn whose start fell out of the window).
 */
async function turnStarts(c: Collections, conversationId: string, docs: readonly MessageDoc[]): Promise<Map<string, number>> {
  const start = new Map<string, number>();
  for (const m of docs) {
    if (m.turn_id === null) continue;
    const seen = start.get(m.turn_id);
    if (m.role === 'visitor' && (seen === undefined || m.seq < seen)) start.set(m.turn_id, m.seq);
  }
  const missing = [...new Set(docs.filter((m) => m.turn_id !== null && !start.has(m.turn_id)).map((m) => m.turn_id!))];
  if (missing.length > 0) {
    const rows = await c.messages.aggregate<{ _id: string; first: number }>([
      { $match: { conversation_id: conversationId, turn_id: { $in: missing } } },
      { $group: { _id: '$turn_id', first: { $min: '$seq' } } },
    ]).toArray();
    for (const r of rows) start.set(r._id, r.first);
  }
  return start;
}

/**
 * The aggregation that finds turns cut short: visitor messages with a turn and no agent message of that
 * turn, one row per turn with its first visitor message's time and id, oldest first. `conversations` is
 * the first stage (which conversations to look in).
 */
export function unansweredTurnsPipeline(conversations: Document[]): Document[] {
  return [
    ...conversations,
    { $project: { _id: 1, agent_id: 1 } },
    {
      $lookup: {
        from: 'messages', localField: '_id', foreignField: 'conversation_id', as: 'visit',
        pipeline: [{ $match: { role: 'visitor', turn_id: { $type: 'string' } } }, { $project: { turn_id: 1, org_id: 1, created_at: 1 } }],
      },
    },
    { $unwind: '$visit' },
    {
      $lookup: {
        from: 'messages', localField: 'visit.turn_id', foreignField: 'turn_id', as: 'answer',
        pipeline: [{ $match: { role: 'agent' } }, { $limit: 1 }, { $project: { _id: 1 } }],
      },
    },
    { $match: { answer: { $size: 0 } } },
    { $sort: { 'visit.created_at': 1, 'visit._id': 1 } },
    {
      $group: {
        _id: '$visit.turn_id', conversation_id: { $first: '$_id' }, agent_id: { $first: '$agent_id' }, org_id: { $first: '$visit.org_id' },
        created_at: { $first: '$visit.created_at' }, first_message: { $first: '$visit._id' },
      },
    },
    { $sort: { created_at: 1, first_message: 1 } },
  ];
}

/**
 * Appends `m` in the transaction of `session`: the conversation's counter gives its `seq` (the update
 * that touches `updated_at` increments it and returns it; a concurrent append to the same conversation
 * conflicts and runs again), then the message. Throws when the conversation does not exist. Resolves with
 * the conversation's agent id.
 */
async function insertMessage(c: Collections, session: ClientSession, m: MessageRecord): Promise<string> {
  const conv = await c.conversations.findOneAndUpdate(
    { _id: m.conversation_id }, { $set: { updated_at: m.created_at }, $inc: { message_seq: 1 } },
    { session, returnDocument: 'after', projection: { message_seq: 1, agent_id: 1 } },
  );
  if (conv === null) throw new Error(`conversation ${m.conversation_id} does not exist: message ${m.id} was not stored`);
  await c.messages.insertOne(messageToDoc(m, conv.message_seq), { session });
  return conv.agent_id;
}

/** The feed entry of a message written by the conversation's owner `origin` (sockets of other processes follow it). */
async function messageChange(c: Collections, session: ClientSession, m: MessageRecord, origin: string | undefined): Promise<void> {
  if (origin === undefined) return;
  await recordChanges(c, session, [{ kind: 'message', org_id: m.org_id, conversation_id: m.conversation_id, message_id: m.id, role: m.role, turn_id: m.turn_id, origin }], m.created_at);
}

/**
 * ConversationsPort on MongoDB (collections `conversations`, `messages`: `seq` per conversation, unique
 * with `conversation_id`). Every write is one transaction: a fenced write first checks and locks the
 * conversation's lease (leases.ts checkFence), a message takes the conversation's next `seq`, and the
 * feed entry, the outbox events with their deliveries and the usage of an agent reply commit with it.
 * This process's writes to one conversation apply in the order they were issued (MongoContext.queue).
 */
export function createConversations({ c, tx, queue }: MongoContext): ConversationsPort {
  const fenced = async (session: ClientSession, conversationId: string, fence: Fence | undefined) => {
    if (fence !== undefined) await checkFence(c, session, conversationId, fence);
  };
  const append = async (session: ClientSession, m: MessageRecord, events: OutboxEvent[] | undefined, origin: string | undefined): Promise<OutboxEvent[]> => {
    const agentId = await insertMessage(c, session, m);
    await messageChange(c, session, m, origin);
    await writeOutbox(c, session, events);
    if (m.role !== 'agent' || m.usage === null) return [];
    return countUsage(c, session, {
      org_id: m.org_id, agent_id: agentId, conversation_id: m.conversation_id, at: m.created_at,
      input_tokens: m.usage.input_tokens, output_tokens: m.usage.output_tokens,
    });
  };

  return {
    create(r) {
      return queue.run(r.id, async () => { await c.conversations.insertOne(conversationToDoc(r)); });
    },
    start(conversation, message, events, extra) {
      const lease = extra?.lease;
      return queue.run(conversation.id, () => tx(async (session) => {
        await c.conversations.insertOne(conversationToDoc(conversation), { session });
        for (const m of extra?.earlier ?? []) await insertMessage(c, session, m);
        if (lease !== undefined) {
          await c.conversation_leases.insertOne({
            _id: conversation.id, owner_id: lease.owner.id, owner_url: lease.owner.url, fence: 1, expires_at: lease.until, released: false,
          }, { session });
          await recordChanges(c, session, [{
            kind: 'conversation', org_id: conversation.org_id, conversation_id: conversation.id, agent_id: conversation.agent_id, origin: lease.owner.id,
          }], conversation.created_at);
        }
        await append(session, message, events, lease?.owner.id);
      }));
    },
    async get(orgId, id) {
      const d = await c.conversations.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : conversationFromDoc(d);
    },
    async findByVisitorTokenHash(visitorTokenHash) {
      const d = await c.conversations.findOne({ visitor_token_hash: visitorTokenHash });
      return d === null ? undefined : conversationFromDoc(d);
    },
    async list(orgId, f, page) {
      const filter: Document = {};
      if (f.agent_id !== undefined) filter.agent_id = f.agent_id;
      if (f.status !== undefined) filter.status = f.status;
      // $ne also matches conversations without a source (as SQLite's null-safe IS NOT).
      if (f.exclude_source !== undefined) filter['metadata.source'] = { $ne: f.exclude_source };
      return toPage(await newestFirst(c.conversations, { org_id: orgId }, page, 'conversation', filter), page, conversationFromDoc);
    },
    setStatus(id, status, at, events, fence) {
      return queue.run(id, () => tx(async (session) => {
        await fenced(session, id, fence);
        const d = await c.conversations.findOneAndUpdate({ _id: id }, { $set: { status, updated_at: at } }, { session, projection: { org_id: 1 } });
        if (fence !== undefined && d !== null) {
          await recordChanges(c, session, [{ kind: 'status', org_id: d.org_id, conversation_id: id, status, origin: fence.owner_id }], at);
        }
        await writeOutbox(c, session, events);
      }));
    },
    async orgOf(id) {
      return (await c.conversations.findOne({ _id: id }, { projection: { org_id: 1 } }))?.org_id;
    },
    async detachFromTurn(messageId, scope) {
      const detach = (session?: ClientSession) => c.messages.updateOne({ _id: messageId, role: 'visitor' }, { $set: { turn_id: null } }, { session });
      if (scope === undefined) {
        await detach();
        return;
      }
      await queue.run(scope.conversationId, () => tx(async (session) => {
        await fenced(session, scope.conversationId, scope.fence);
        await detach(session);
      }));
    },
    appendMessage(m, events, fence) {
      return queue.run(m.conversation_id, () => tx(async (session) => {
        await fenced(session, m.conversation_id, fence);
        return append(session, m, events, fence?.owner_id);
      }));
    },
    async listMessages(orgId, conversationId, page) {
      let after = 0;
      if (page.after !== undefined) {
        const cursor = await c.messages.findOne({ _id: page.after, org_id: orgId, conversation_id: conversationId }, { projection: { seq: 1 } });
        if (cursor === null) throw unknownCursor('message');
        after = cursor.seq;
      }
      const docs = await c.messages.find({ org_id: orgId, conversation_id: conversationId, seq: { $gt: after } }).sort({ seq: 1 }).limit(page.limit + 1).toArray();
      return toPage(docs, page, messageFromDoc);
    },
    erase(orgId, id, at, events, fence) {
      return queue.run(id, () => tx(async (session) => {
        await fenced(session, id, fence);
        if (await c.conversations.findOne({ _id: id, org_id: orgId }, { session, projection: { _id: 1 } }) === null) return false;
        // Its webhook events keep their ids and kinds, lose their text; so do their receivers' answers.
        const stored = await c.webhook_events.find({ conversation_id: id, org_id: orgId }, { session, projection: { data: 1 } }).toArray();
        if (stored.length > 0) {
          await c.webhook_events.bulkWrite(stored.map((e) => ({ updateOne: { filter: { _id: e._id }, update: { $set: { data: scrubEventData(e.data) } } } })), { session });
          const eventIds = stored.map((e) => e._id);
          await c.webhook_deliveries.updateMany({ event_id: { $in: eventIds }, last_body: { $nin: [null, ''] } }, { $set: { last_body: ERASED_MARKER } }, { session });
          const deliveries = await c.webhook_deliveries.find({ event_id: { $in: eventIds } }, { session, projection: { _id: 1 } }).toArray();
          if (deliveries.length > 0) {
            await c.webhook_attempts.updateMany({ delivery_id: { $in: deliveries.map((d) => d._id) }, body: { $ne: '' } }, { $set: { body: ERASED_MARKER } }, { session });
          }
        }
        await c.messages.deleteMany({ conversation_id: id }, { session });
        await c.tool_runs.deleteMany({ org_id: orgId, conversation_id: id }, { session });
        await c.conversations.deleteOne({ _id: id }, { session });
        // The lease ends for good: released, its fence moved on (a late fenced write of the old owner is refused).
        const ended = await c.conversation_leases.updateOne(
          { _id: id }, [{ $set: { fence: { $add: ['$fence', 1] }, released: true, owner_id: '', owner_url: '' } }], { session },
        );
        if (ended.matchedCount === 0) {
          await c.conversation_leases.insertOne({ _id: id, owner_id: '', owner_url: '', fence: 1, expires_at: at, released: true }, { session });
        }
        await recordChanges(c, session, [{ kind: 'erased', org_id: orgId, conversation_id: id, origin: fence?.owner_id ?? '' }], at);
        await writeOutbox(c, session, events);
        return true;
      }));
    },
    async idleSince(orgId, before, limit) {
      const docs = await c.conversations.find({ org_id: orgId, updated_at: { $lt: before } }, { projection: { _id: 1 } })
        .sort({ updated_at: 1, _id: 1 }).limit(limit).toArray();
      return docs.map((d) => d._id);
    },
    async getMessage(orgId, id) {
      const d = await c.messages.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : messageFromDoc(d);
    },
    async history(conversationId, limit) {
      const docs = await c.messages.find({ conversation_id: conversationId, status: 'completed' }).sort({ seq: -1 }).limit(limit).toArray();
      return historyOrder(docs, await turnStarts(c, conversationId, docs)).map(messageFromDoc);
    },
    async failInterruptedTurns(error, at, events, scope) {
      const first = scope === 'unleased'
        ? [
          { $lookup: { from: 'conversation_leases', localField: '_id', foreignField: '_id', as: 'lease' } },
          { $match: { lease: { $size: 0 } } },
        ]
        : [{ $match: { _id: scope.conversationId } }];
      const turns = await c.conversations.aggregate<{ _id: string; conversation_id: string; agent_id: string; org_id: string }>(unansweredTurnsPipeline(first)).toArray();
      if (turns.length === 0) return [];
      const replies = turns.map((t) => {
        const message: MessageRecord = {
          id: newId('msg'), conversation_id: t.conversation_id, org_id: t.org_id, turn_id: t._id, role: 'agent', status: 'failed', content: '',
          citations: [], tool_runs: [], usage: null, finish_reason: null, timing: null, error: { type: error.type, code: error.code, message: error.message }, created_at: at,
        };
        return { message, events: events?.({ message, agent_id: t.agent_id }) };
      });
      const fence = scope === 'unleased' ? undefined : scope.fence;
      const run = () => tx(async (session) => {
        const appended: InterruptedTurn[] = [];
        for (const { message, events: replyEvents } of replies) {
          await fenced(session, message.conversation_id, fence);
          // A turn answered since the read above keeps its answer.
          if ((await c.messages.countDocuments({ turn_id: message.turn_id, role: 'agent' }, { session, limit: 1 })) > 0) continue;
          await append(session, message, replyEvents, fence?.owner_id);
          appended.push({ org_id: message.org_id, conversation_id: message.conversation_id, turn_id: message.turn_id!, message_id: message.id });
        }
        return appended;
      });
      return scope === 'unleased' ? run() : queue.run(scope.conversationId, run);
    },
  };
}
