/**
 * The writes of the conversations port as plain functions of a connection and JSON-cloneable arguments,
 * so that the same code runs on the main thread (GroupCommit) and in the writer thread
 * (writer.worker.ts). Each runs inside the caller's transaction and savepoint (src/store/sqlite/group-commit.ts).
 */
import type Database from 'better-sqlite3';
import { ERASED_MARKER, type ConversationRecord, type ConversationStatus, type Fence, type InterruptedTurn, type LeaseOwner, type MessageRecord, type OutboxEvent } from '../records.js';
import { KNOWLEDGE_WRITES } from './knowledge-writes.js';
import { checkFence, insertLease, LEASE_WRITES } from './lease-writes.js';
import { FEED_WRITES, recordChanges } from './feed.js';
import { TOOL_RUN_WRITES } from './tool-run-writes.js';
import { REFRESH_TOKEN_WRITES } from './refresh-token-writes.js';
import { SOCKET_TICKET_WRITES } from './socket-ticket-writes.js';
import { countUsage, OUTBOX_WRITES, writeOutbox } from './outbox-writes.js';
import { toJson } from './rows.js';
import { scrubEventData } from '../erasure.js';
import { statementCache } from './statement-cache.js';

function prepare(db: Database.Database) {
  return {
    insertConversation: db.prepare(
      'INSERT INTO conversations (id, org_id, agent_id, status, metadata, visitor_token_hash, public_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    detachFromTurn: db.prepare("UPDATE messages SET turn_id = NULL WHERE id = ? AND role = 'visitor'"),
    setStatus: db.prepare('UPDATE conversations SET status = ?, updated_at = ? WHERE id = ?'),
    orgOf: db.prepare('SELECT org_id FROM conversations WHERE id = ?'),
    touch: db.prepare('UPDATE conversations SET updated_at = ? WHERE id = ?'),
    insertMessage: db.prepare(
      `INSERT INTO messages (id, conversation_id, org_id, turn_id, role, content, citations, tool_runs, usage, status, finish_reason, error, timing, created_at)
       VALUES (@id, @conversation_id, @org_id, @turn_id, @role, @content, @citations, @tool_runs, @usage, @status, @finish_reason, @error, @timing, @created_at)`),
    // Whether turn `turn_id` has its agent message (start-up recovery skips a turn answered meanwhile).
    turnAnswered: db.prepare("SELECT 1 FROM messages WHERE turn_id = ? AND role = 'agent' LIMIT 1"),
    conversationOfOrg: db.prepare('SELECT 1 FROM conversations WHERE org_id = ? AND id = ?'),
    eventsOf: db.prepare('SELECT id, data FROM webhook_events WHERE conversation_id = ? AND org_id = ?'),
    scrubEvent: db.prepare('UPDATE webhook_events SET data = ? WHERE id = ?'),
    scrubDeliveries: db.prepare(
      `UPDATE webhook_deliveries SET last_body = ? WHERE last_body IS NOT NULL AND last_body != ''
         AND event_id IN (SELECT id FROM webhook_events WHERE conversation_id = ? AND org_id = ?)`),
    scrubAttempts: db.prepare(
      `UPDATE webhook_attempts SET body = ? WHERE body != '' AND delivery_id IN (
         SELECT d.id FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.conversation_id = ? AND e.org_id = ?)`),
    deleteMessages: db.prepare('DELETE FROM messages WHERE conversation_id = ?'),
    deleteToolRuns: db.prepare('DELETE FROM tool_runs WHERE org_id = ? AND conversation_id = ?'),
    deleteConversation: db.prepare('DELETE FROM conversations WHERE id = ?'),
    // The lease ends for good: released, its fence moved on (a late fenced write of the old owner is refused).
    endLease: db.prepare("UPDATE conversation_leases SET fence = fence + 1, released = 1, owner_id = '', owner_url = '' WHERE conversation_id = ?"),
    tombstoneLease: db.prepare("INSERT INTO conversation_leases (conversation_id, owner_id, owner_url, fence, expires_at, released) VALUES (?, '', '', 1, ?, 1)"),
  };
}

const statements = statementCache(prepare);

function insertConversation(db: Database.Database, c: ConversationRecord): void {
  statements(db).insertConversation.run(c.id, c.org_id, c.agent_id, c.status, toJson(c.metadata), c.visitor_token_hash, c.public_key ?? null, c.created_at, c.updated_at);
}

function insertMessage(db: Database.Database, rec: MessageRecord): void {
  const sql = statements(db);
  sql.insertMessage.run({
    ...rec, citations: toJson(rec.citations), tool_runs: toJson(rec.tool_runs),
    usage: rec.usage === null ? null : toJson(rec.usage), error: rec.error === null ? null : toJson(rec.error),
    timing: rec.timing === null ? null : toJson(rec.timing),
  });
  sql.touch.run(rec.created_at, rec.conversation_id);
}

/**
 * An agent reply with usage counts its tokens (and may fire usage thresholds: usage.threshold events);
 * every other message returns [].
 */
function countReply(db: Database.Database, rec: MessageRecord): OutboxEvent[] {
  if (rec.role !== 'agent' || rec.usage === null) return [];
  return countUsage(db, {
    org_id: rec.org_id, conversation_id: rec.conversation_id, at: rec.created_at,
    input_tokens: rec.usage.input_tokens, output_tokens: rec.usage.output_tokens,
  });
}

/**
 * The write operations, by name. Arguments and results are structured-cloneable. `events` (optional) go
 * to the outbox in the same savepoint as the change (src/store/sqlite/outbox-writes.ts). Webhook writes
 * (OUTBOX_WRITES) and the chunk-storing writes of knowledge ingestion (KNOWLEDGE_WRITES) go the same way.
 */
/**
 * The feed entry of a stored message, when its writer is the conversation's owner (`origin`): sockets of
 * other processes follow the conversation through it (FeedChange `message`).
 */
function messageChange(db: Database.Database, m: MessageRecord, origin: string | undefined): void {
  if (origin === undefined) return;
  recordChanges(db, [{ kind: 'message', org_id: m.org_id, conversation_id: m.conversation_id, message_id: m.id, role: m.role, turn_id: m.turn_id, origin }], m.created_at);
}

/** The fence check of a write that carries one (ConversationsPort: a stale owner's write is refused). */
function fenced(db: Database.Database, conversationId: string, fence: Fence | undefined): void {
  if (fence !== undefined) checkFence(db, conversationId, fence, new Date().toISOString());
}

export const CONVERSATION_WRITES = {
  ...OUTBOX_WRITES,
  ...KNOWLEDGE_WRITES,
  ...LEASE_WRITES,
  ...FEED_WRITES,
  ...TOOL_RUN_WRITES,
  ...REFRESH_TOKEN_WRITES,
  ...SOCKET_TICKET_WRITES,
  /** Inserts a conversation. */
  createConversation(db: Database.Database, c: ConversationRecord): void {
    insertConversation(db, c);
  },
  /**
   * Inserts a conversation, the messages `earlier` (an imported history, in order) and its first message
   * (one write: all or nothing), and, with `lease`, the conversation's first lease (fence 1) for its owner.
   */
  startConversation(db: Database.Database, args: {
    conversation: ConversationRecord; message: MessageRecord; events?: OutboxEvent[] | undefined;
    lease?: { owner: LeaseOwner; until: string } | undefined; earlier?: MessageRecord[] | undefined;
  }): void {
    const c = args.conversation;
    insertConversation(db, c);
    if (args.earlier !== undefined) for (const m of args.earlier) insertMessage(db, m);
    insertMessage(db, args.message);
    if (args.lease !== undefined) {
      insertLease(db, c.id, args.lease.owner, args.lease.until);
      recordChanges(db, [{ kind: 'conversation', org_id: c.org_id, conversation_id: c.id, agent_id: c.agent_id, origin: args.lease.owner.id }], c.created_at);
      messageChange(db, args.message, args.lease.owner.id);
    }
    writeOutbox(db, args.events);
  },
  /** Sets a conversation's status and updated_at (after the fence check, when fenced). */
  setStatus(db: Database.Database, args: { id: string; status: ConversationStatus; at: string; events?: OutboxEvent[] | undefined; fence?: Fence | undefined }): void {
    fenced(db, args.id, args.fence);
    statements(db).setStatus.run(args.status, args.at, args.id);
    if (args.fence !== undefined) {
      const row = statements(db).orgOf.get(args.id) as { org_id: string } | undefined;
      if (row !== undefined) recordChanges(db, [{ kind: 'status', org_id: row.org_id, conversation_id: args.id, status: args.status, origin: args.fence.owner_id }], args.at);
    }
    writeOutbox(db, args.events);
  },
  /** Clears the `turn_id` of a visitor message (forwarded to a person instead of answered). */
  detachFromTurn(db: Database.Database, args: { messageId: string; conversationId?: string | undefined; fence?: Fence | undefined }): void {
    if (args.conversationId !== undefined) fenced(db, args.conversationId, args.fence);
    statements(db).detachFromTurn.run(args.messageId);
  },
  /**
   * Appends a message and touches its conversation's updated_at (throws on a missing conversation: FK),
   * with its events; counts an agent reply's usage. Returns the usage.threshold events it fired.
   */
  appendMessage(db: Database.Database, args: { message: MessageRecord; events?: OutboxEvent[] | undefined; fence?: Fence | undefined }): OutboxEvent[] {
    fenced(db, args.message.conversation_id, args.fence);
    insertMessage(db, args.message);
    messageChange(db, args.message, args.fence?.owner_id);
    writeOutbox(db, args.events);
    return countReply(db, args.message);
  },
  /** ConversationsPort.erase (see there): true when the conversation existed and is gone now. */
  eraseConversation(db: Database.Database, a: { orgId: string; id: string; at: string; events?: OutboxEvent[] | undefined; fence?: Fence | undefined }): boolean {
    fenced(db, a.id, a.fence);
    const sql = statements(db);
    if (sql.conversationOfOrg.get(a.orgId, a.id) === undefined) return false;
    for (const e of sql.eventsOf.all(a.id, a.orgId) as Array<{ id: string; data: string }>) {
      sql.scrubEvent.run(toJson(scrubEventData(JSON.parse(e.data) as Record<string, unknown>)), e.id);
    }
    sql.scrubDeliveries.run(ERASED_MARKER, a.id, a.orgId);
    sql.scrubAttempts.run(ERASED_MARKER, a.id, a.orgId);
    sql.deleteMessages.run(a.id);
    sql.deleteToolRuns.run(a.orgId, a.id);
    sql.deleteConversation.run(a.id);
    if (sql.endLease.run(a.id).changes === 0) sql.tombstoneLease.run(a.id, a.at);
    recordChanges(db, [{ kind: 'erased', org_id: a.orgId, conversation_id: a.id, origin: a.fence?.owner_id ?? '' }], a.at);
    writeOutbox(db, a.events);
    return true;
  },
  /**
   * Appends start-up recovery's failed agent replies (ConversationsPort.failInterruptedTurns), each with its
   * outbox events, skipping a turn that has an agent message by now; returns what it appended, in order.
   */
  appendInterruptedReplies(db: Database.Database, args: { replies: Array<{ message: MessageRecord; events?: OutboxEvent[] | undefined }>; fence?: Fence | undefined }): InterruptedTurn[] {
    const sql = statements(db);
    const appended: InterruptedTurn[] = [];
    for (const { message, events } of args.replies) {
      fenced(db, message.conversation_id, args.fence);
      if (message.turn_id === null || sql.turnAnswered.get(message.turn_id) !== undefined) continue;
      insertMessage(db, message);
      messageChange(db, message, args.fence?.owner_id);
      writeOutbox(db, events);
      appended.push({ org_id: message.org_id, conversation_id: message.conversation_id, turn_id: message.turn_id, message_id: message.id });
    }
    return appended;
  },
} as const;

/** The name of a conversation write. */
export type ConversationWriteName = keyof typeof CONVERSATION_WRITES;
/** The argument of write `K`. */
export type ConversationWriteArgs<K extends ConversationWriteName> = Parameters<(typeof CONVERSATION_WRITES)[K]>[1];
/** The result of write `K`. */
export type ConversationWriteResult<K extends ConversationWriteName> = ReturnType<(typeof CONVERSATION_WRITES)[K]>;
