import type Database from 'better-sqlite3';
import type { ConversationsPort } from '../ports.js';
import type { ConversationRecord, ConversationStatus, MessageRecord, Page } from '../records.js';
import { newId } from '../../ids/ids.js';
import type { ConversationWriter } from './writer.js';
import { NewestFirstList, toPage, unknownCursor } from './pagination.js';
import { fromJson, fromJsonOrNull, type Row } from './rows.js';

function conversationFromRow(r: Row): ConversationRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, agent_id: r.agent_id as string,
    status: r.status as ConversationStatus, metadata: fromJson(r.metadata),
    visitor_token_hash: (r.visitor_token_hash as string | null) ?? null, public_key: (r.public_key as string | null) ?? null,
    created_at: r.created_at as string, updated_at: r.updated_at as string,
  };
}

function messageFromRow(r: Row): MessageRecord {
  return {
    id: r.id as string, conversation_id: r.conversation_id as string, org_id: r.org_id as string,
    turn_id: (r.turn_id as string | null) ?? null, role: r.role as MessageRecord['role'],
    content: r.content as string, citations: fromJson(r.citations), tool_runs: fromJson(r.tool_runs),
    usage: fromJsonOrNull(r.usage), status: r.status as MessageRecord['status'],
    finish_reason: (r.finish_reason as MessageRecord['finish_reason']) ?? null,
    error: fromJsonOrNull(r.error), timing: fromJsonOrNull(r.timing), created_at: r.created_at as string,
  };
}

/**
 * ConversationsPort on SQLite: tables `conversations` and `messages` (`seq` is the stored order;
 * `conversation_id` references `conversations(id)`, so appending to a missing conversation fails).
 * Reads use `db`; every write goes through `writer` (src/store/sqlite/writer.ts: group commit on the main
 * thread or in the writer thread; writes of one event-loop turn share one transaction, apply in issue
 * order and resolve after the commit). The writes themselves are in conversation-writes.ts.
 */
export function createConversations(db: Database.Database, writer: ConversationWriter): ConversationsPort {
  const sql = {
    conversationById: db.prepare('SELECT * FROM conversations WHERE org_id = ? AND id = ?'),
    byVisitorToken: db.prepare('SELECT * FROM conversations WHERE visitor_token_hash = ?'),
    orgOf: db.prepare('SELECT org_id FROM conversations WHERE id = ?'),
    messageSeq: db.prepare('SELECT seq FROM messages WHERE org_id = ? AND conversation_id = ? AND id = ?'),
    messageById: db.prepare('SELECT * FROM messages WHERE org_id = ? AND id = ?'),
    idleSince: db.prepare('SELECT id FROM conversations WHERE org_id = ? AND updated_at < ? ORDER BY updated_at, id LIMIT ?'),
    messagesAfter: db.prepare('SELECT * FROM messages WHERE org_id = ? AND conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    history: db.prepare(
      `SELECT * FROM (SELECT * FROM messages WHERE conversation_id = ? AND status = 'completed' ORDER BY seq DESC LIMIT ?) h
       ORDER BY CASE WHEN turn_id IS NULL THEN seq ELSE (SELECT min(t.seq) FROM messages t WHERE t.turn_id = h.turn_id) END,
         CASE role WHEN 'visitor' THEN 0 ELSE 1 END, seq`),
    // Every turn of conversations without a lease with a visitor message and no agent message, in the
    // order the visitor messages were stored.
    unansweredUnleased: db.prepare(
      `SELECT v.org_id, v.conversation_id, v.turn_id, c.agent_id, min(v.seq) AS first_seq
         FROM messages v JOIN conversations c ON c.id = v.conversation_id
       WHERE v.role = 'visitor' AND v.turn_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM conversation_leases l WHERE l.conversation_id = v.conversation_id)
         AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.turn_id = v.turn_id AND a.role = 'agent')
       GROUP BY v.turn_id ORDER BY first_seq`),
    // The same, of one conversation (messages_conversation index).
    unansweredOf: db.prepare(
      `SELECT v.org_id, v.conversation_id, v.turn_id, c.agent_id, min(v.seq) AS first_seq
         FROM messages v JOIN conversations c ON c.id = v.conversation_id
       WHERE v.conversation_id = ? AND v.role = 'visitor' AND v.turn_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.turn_id = v.turn_id AND a.role = 'agent')
       GROUP BY v.turn_id ORDER BY first_seq`),
  };
  const conversations = new NewestFirstList(db, 'conversations', 'org_id = ?', 'conversation');

  return {
    create(c) {
      return writer.run('createConversation', c);
    },
    start(conversation, message, events, extra) {
      return writer.run('startConversation', {
        conversation, message, events, lease: extra?.lease,
        earlier: extra?.earlier !== undefined && extra.earlier.length > 0 ? extra.earlier : undefined,
      });
    },
    async get(orgId, id) {
      const r = sql.conversationById.get(orgId, id) as Row | undefined;
      return r ? conversationFromRow(r) : undefined;
    },
    async findByVisitorTokenHash(visitorTokenHash) {
      const r = sql.byVisitorToken.get(visitorTokenHash) as Row | undefined;
      return r ? conversationFromRow(r) : undefined;
    },
    async list(orgId, filter, page) {
      let where = '';
      const params: unknown[] = [];
      if (filter.agent_id !== undefined) { where += ' AND agent_id = ?'; params.push(filter.agent_id); }
      if (filter.status !== undefined) { where += ' AND status = ?'; params.push(filter.status); }
      // IS NOT: null-safe, so conversations without a source stay in.
      if (filter.exclude_source !== undefined) { where += " AND json_extract(metadata, '$.source') IS NOT ?"; params.push(filter.exclude_source); }
      return toPage(conversations.rows([orgId], page, where, params), page, conversationFromRow);
    },
    setStatus(id, status, at, events, fence) {
      return writer.run('setStatus', { id, status, at, events, fence });
    },
    async orgOf(id) {
      return (sql.orgOf.get(id) as { org_id: string } | undefined)?.org_id;
    },
    detachFromTurn(messageId, fenced) {
      return writer.run('detachFromTurn', { messageId, conversationId: fenced?.conversationId, fence: fenced?.fence });
    },
    appendMessage(rec, events, fence) {
      return writer.run('appendMessage', { message: rec, events, fence });
    },
    async listMessages(orgId, conversationId, page): Promise<Page<MessageRecord>> {
      let afterSeq = 0;
      if (page.after !== undefined) {
        const cursor = sql.messageSeq.get(orgId, conversationId, page.after) as { seq: number } | undefined;
        if (cursor === undefined) throw unknownCursor('message');
        afterSeq = cursor.seq;
      }
      const rows = sql.messagesAfter.all(orgId, conversationId, afterSeq, page.limit + 1) as Row[];
      return toPage(rows, page, messageFromRow);
    },
    erase(orgId, id, at, events, fence) {
      return writer.run('eraseConversation', { orgId, id, at, events, fence });
    },
    async idleSince(orgId, before, limit) {
      return (sql.idleSince.all(orgId, before, limit) as Array<{ id: string }>).map((r) => r.id);
    },
    async getMessage(orgId, id) {
      const r = sql.messageById.get(orgId, id) as Row | undefined;
      return r ? messageFromRow(r) : undefined;
    },
    async history(conversationId, limit) {
      return (sql.history.all(conversationId, limit) as Row[]).map(messageFromRow);
    },
    failInterruptedTurns(error, at, events, scope) {
      // Read on this connection first: after a clean stop there is nothing to fail, and start-up then commits
      // nothing, so an idle server does not start the writer thread (about 18 MB of RSS) before its first write.
      const turns = (scope === 'unleased' ? sql.unansweredUnleased.all() : sql.unansweredOf.all(scope.conversationId)) as
        Array<{ org_id: string; conversation_id: string; turn_id: string; agent_id: string }>;
      if (turns.length === 0) return Promise.resolve([]);
      const replies = turns.map((t) => {
        const message: MessageRecord = {
          id: newId('msg'), conversation_id: t.conversation_id, org_id: t.org_id, turn_id: t.turn_id, role: 'agent',
          status: 'failed', content: '', citations: [], tool_runs: [], usage: null, finish_reason: null, timing: null,
          error: { type: error.type, code: error.code, message: error.message }, created_at: at,
        };
        return { message, events: events?.({ message, agent_id: t.agent_id }) };
      });
      return writer.run('appendInterruptedReplies', { replies, fence: scope === 'unleased' ? undefined : scope.fence });
    },
  };
}
