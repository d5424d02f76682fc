import type Database from 'better-sqlite3';
import { newId } from '../../ids/ids.js';
import type { ConversationsPort } from '../ports.js';
import type { ConversationRecord, ConversationStatus, InterruptedTurn, MessageRecord, Page } from '../records.js';
import type { GroupCommit } from './group-commit.js';
import { NewestFirstList, toPage, unknownCursor } from './pagination.js';
import { fromJson, fromJsonOrNull, toJson, type Row } from './rows.js';

function conversationFromRow(r: Row): ConversationRecord {
  return {
    id: r.id as string, org_id: r.org_id as string, agent_id: r.agent_id as string,
    status: r.status as ConversationStatus, metadata: fromJson(r.metadata),
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
    error: fromJsonOrNull(r.error), created_at: r.created_at as string,
  };
}

/**
 * ConversationsPort on SQLite: tables `conversations` and `messages` (`seq` is the stored order;
 * `conversation_id` references `conversations(id)`, so appending to a missing conversation fails).
 * Every write goes through the group commit (`commits`): writes of one event-loop turn share one
 * transaction, apply in issue order and resolve after the commit (src/store/sqlite/group-commit.ts).
 */
export function createConversations(db: Database.Database, commits: GroupCommit): ConversationsPort {
  const sql = {
    insertConversation: db.prepare(
      'INSERT INTO conversations (id, org_id, agent_id, status, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    conversationById: db.prepare('SELECT * FROM conversations WHERE org_id = ? AND id = ?'),
    setStatus: db.prepare('UPDATE conversations SET status = ?, updated_at = ? WHERE id = ?'),
    touch: db.prepare('UPDATE conversations SET updated_at = ? WHERE id = ?'),
    insertMessage: db.prepare(
      `INSERT INTO messages (id, conversation_id, org_id, turn_id, role, content, citations, tool_runs, usage, status, finish_reason, error, created_at)
       VALUES (@id, @conversation_id, @org_id, @turn_id, @role, @content, @citations, @tool_runs, @usage, @status, @finish_reason, @error, @created_at)`),
    messageSeq: db.prepare('SELECT seq FROM messages WHERE org_id = ? AND conversation_id = ? AND id = ?'),
    messagesAfter: db.prepare('SELECT * FROM messages WHERE org_id = ? AND conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    history: db.prepare(
      `SELECT * FROM (SELECT * FROM messages WHERE conversation_id = ? AND status = 'completed' ORDER BY seq DESC LIMIT ?)
       ORDER BY turn_id IS NULL, turn_id, CASE role WHEN 'visitor' THEN 0 ELSE 1 END, seq`),
    unansweredTurns: db.prepare(
      `SELECT v.org_id, v.conversation_id, v.turn_id, min(v.seq) AS first_seq FROM messages v
       WHERE v.role = 'visitor' AND v.turn_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM messages a WHERE a.turn_id = v.turn_id AND a.role = 'agent')
       GROUP BY v.turn_id ORDER BY first_seq`),
  };
  const conversations = new NewestFirstList(db, 'conversations', 'org_id = ?', 'conversation');

  function insertMessage(rec: MessageRecord): void {
    sql.insertMessage.run({
      ...rec, citations: toJson(rec.citations), tool_runs: toJson(rec.tool_runs),
      usage: rec.usage === null ? null : toJson(rec.usage), error: rec.error === null ? null : toJson(rec.error),
    });
    sql.touch.run(rec.created_at, rec.conversation_id);
  }

  return {
    create(c) {
      return commits.write(() => {
        sql.insertConversation.run(c.id, c.org_id, c.agent_id, c.status, toJson(c.metadata), c.created_at, c.updated_at);
      });
    },
    async get(orgId, id) {
      const r = sql.conversationById.get(orgId, id) as Row | undefined;
      return r ? conversationFromRow(r) : undefined;
    },
    async list(orgId, filter, page) {
      let where = '';
      const params: unknown[] = [];
      if (filter.agent_id !== undefined) { where += ' AND agent_id = ?'; params.push(filter.agent_id); }
      if (filter.status !== undefined) { where += ' AND status = ?'; params.push(filter.status); }
      return toPage(conversations.rows([orgId], page, where, params), page, conversationFromRow);
    },
    setStatus(id, status, at) {
      return commits.write(() => { sql.setStatus.run(status, at, id); });
    },
    appendMessage(rec) {
      return commits.write(() => insertMessage(rec));
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
    async history(conversationId, limit) {
      return (sql.history.all(conversationId, limit) as Row[]).map(messageFromRow);
    },
    failInterruptedTurns(error, at) {
      return commits.write((): InterruptedTurn[] => {
        const turns = sql.unansweredTurns.all() as Array<{ org_id: string; conversation_id: string; turn_id: string }>;
        return turns.map((t) => {
          const messageId = newId('msg');
          insertMessage({
            id: messageId, conversation_id: t.conversation_id, org_id: t.org_id, turn_id: t.turn_id, role: 'agent',
            status: 'failed', content: '', citations: [], tool_runs: [], usage: null, finish_reason: null,
            error: { type: error.type, code: error.code, message: error.message }, created_at: at,
          });
          return { org_id: t.org_id, conversation_id: t.conversation_id, turn_id: t.turn_id, message_id: messageId };
        });
      });
    },
  };
}
