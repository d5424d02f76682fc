/**
 * The socket-ticket writes (table `socket_tickets`, hashes only) as plain functions of a connection and
 * structured-cloneable arguments, like conversation-writes.ts: they run in the SQLite writer thread
 * (src/store/sqlite/writer.ts), so issuing a ticket or opening a socket with one never holds the event
 * loop while another process has the write lock, nor for the commit's fsync.
 */
import type Database from 'better-sqlite3';
import type { SocketTicketRecord } from '../records.js';
import type { Row } from './rows.js';
import { statementCache } from './statement-cache.js';

function prepare(db: Database.Database) {
  return {
    insert: db.prepare('INSERT INTO socket_tickets (ticket_hash, user_id, org_id, session_id, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    consume: db.prepare('UPDATE socket_tickets SET used_at = @at WHERE ticket_hash = @hash AND used_at IS NULL AND expires_at > @at RETURNING *'),
    prune: db.prepare('DELETE FROM socket_tickets WHERE expires_at < ?'),
  };
}

const statements = statementCache(prepare);

/** The socket-ticket writes, by name (merged into CONVERSATION_WRITES); each is the SocketTicketsPort method named. */
export const SOCKET_TICKET_WRITES = {
  /** SocketTicketsPort.create. */
  socketTicketCreate(db: Database.Database, t: SocketTicketRecord): void {
    statements(db).insert.run(t.ticket_hash, t.user_id, t.org_id, t.session_id, t.created_at, t.expires_at, t.used_at);
  },
  /**
   * SocketTicketsPort.consume: one conditional `UPDATE ... WHERE used_at IS NULL AND expires_at > now
   * RETURNING *`, so a ticket is spent at most once; its record, or undefined.
   */
  socketTicketConsume(db: Database.Database, a: { hash: string; at: string }): SocketTicketRecord | undefined {
    const r = statements(db).consume.get({ hash: a.hash, at: a.at }) as Row | undefined;
    if (r === undefined) return undefined;
    return {
      ticket_hash: r.ticket_hash as string, user_id: r.user_id as string, org_id: r.org_id as string,
      session_id: (r.session_id as string | null) ?? null, created_at: r.created_at as string, expires_at: r.expires_at as string, used_at: r.used_at as string,
    };
  },
  /** SocketTicketsPort.prune. */
  socketTicketsPrune(db: Database.Database, a: { before: string }): number {
    return statements(db).prune.run(a.before).changes;
  },
} as const;
