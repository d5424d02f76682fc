import type { SocketTicketsPort } from '../ports.js';
import type { ConversationWriter } from './writer.js';

/**
 * SocketTicketsPort on SQLite (table `socket_tickets`, hashes only): every method is a write, through the
 * writer (socket-ticket-writes.ts), off the event loop. consume() is one conditional
 * `UPDATE ... WHERE used_at IS NULL AND expires_at > now RETURNING *`: a ticket is spent at most once.
 */
export function createSocketTickets(writer: ConversationWriter): SocketTicketsPort {
  return {
    create(t) {
      return writer.run('socketTicketCreate', t);
    },
    consume(hash, at) {
      return writer.run('socketTicketConsume', { hash, at });
    },
    prune(before) {
      return writer.run('socketTicketsPrune', { before });
    },
  };
}
