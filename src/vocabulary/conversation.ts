/**
 * Conversation vocabulary (API.md "Conversations and handoff"): defined once, zod first; the types are
 * inferred, and actors/ imports them as types only.
 */
import { z } from 'zod';

/**
 * Who answers a conversation: `active` (the agent), `pending_handoff` (waiting for a person),
 * `handed_off` (a person), `closed` (nobody: chat on it gets 409 conversation_closed).
 */
export const ConversationStatusSchema = z.enum(['active', 'pending_handoff', 'handed_off', 'closed']).meta({ id: 'ConversationStatus' });
export type ConversationStatus = z.infer<typeof ConversationStatusSchema>;

/** Every conversation status, in the order API.md lists them. */
export const CONVERSATION_STATUSES = ConversationStatusSchema.options;
