import type Database from 'better-sqlite3';
import type { SocketTicketsPort } from '../ports.js';
import type { SocketTicketRecord } from '../records.js';
import type { Row } from './rows.js';

/**
 * SocketTicketsPort on SQLite (table `socket_tickets`, hashes only). consume() is one conditional
 * `UPDATE ... WHERE used_at IS NULL AND expires_at > now RETURNING *`: a ticket is spent at most once.
 */
export function createSocketTickets(db: Database.Database): SocketTicketsPort {
  const sql = {
    insert: db.prepare('INSERT INTO socket_tickets (ticket_hash, user_id, org_id, session_id, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    consume: db.prepare('UPDATE socket_tickets SET used_at = @at WHERE ticket_hash = @hash AND used_at IS NULL AND expires_at > @at RETURNING *'),
    prune: db.prepare('DELETE FROM socket_tickets WHERE expires_at < ?'),
  };
  return {
    async create(t) {
      sql.insert.run(t.ticket_hash, t.user_id, t.org_id, t.session_id, t.created_at, t.expires_at, t.used_at);
    },
    async consume(hash, at) {
      const r = sql.consume.get({ hash, at }) as Row | undefined;
      if (r === undefined) return undefined;
      return {
        ticket_hash: r.ticket_hash as string, user_id: r.user_id as string, org_id: r.org_id as string,
        session_id: (r.session_id as string | null) ?? null, created_at: r.created_at as string, expires_at: r.expires_at as string, used_at: r.used_at as string,
      } satisfies SocketTicketRecord;
    },
    async prune(before) {
      return sql.prune.run(before).changes;
    },
  };
}
