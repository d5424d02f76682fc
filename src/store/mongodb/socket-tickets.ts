import type { SocketTicketsPort } from '../ports.js';
import type { MongoContext } from './context.js';

/** The filter of a ticket that can still be spent at `at`: unspent and not expired. */
export function spendableTicket(hash: string, at: string) {
  return { _id: hash, used_at: null, expires_at: { $gt: at } };
}

/**
 * SocketTicketsPort on MongoDB (collection `socket_tickets`, `_id` the ticket hash, a TTL index on
 * `expire_at`). A ticket is single-use by a conditional update: consume() is one findOneAndUpdate that
 * only an unspent, unexpired ticket matches, so of concurrent calls exactly one gets it.
 */
export function createSocketTickets({ c }: MongoContext): SocketTicketsPort {
  return {
    async create(t) {
      await c.socket_tickets.insertOne({
        _id: t.ticket_hash, user_id: t.user_id, org_id: t.org_id, session_id: t.session_id, created_at: t.created_at,
        expires_at: t.expires_at, used_at: t.used_at, expire_at: new Date(t.expires_at),
      });
    },
    async consume(hash, at) {
      const d = await c.socket_tickets.findOneAndUpdate(spendableTicket(hash, at), { $set: { used_at: at } }, { returnDocument: 'after' });
      if (d === null) return undefined;
      return {
        ticket_hash: d._id, user_id: d.user_id, org_id: d.org_id, session_id: d.session_id ?? null,
        created_at: d.created_at, expires_at: d.expires_at, used_at: d.used_at,
      };
    },
    async prune(before) {
      return (await c.socket_tickets.deleteMany({ expires_at: { $lt: before } })).deletedCount;
    },
  };
}
