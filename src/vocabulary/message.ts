/** Message vocabulary (API.md "Conversations and handoff"): defined once, zod first. */
import { z } from 'zod';

/** Who wrote a message: the visitor (or API caller), the agent, or a human operator. */
export const MessageRoleSchema = z.enum(['visitor', 'agent', 'operator']).meta({ id: 'MessageRole' });
export type MessageRole = z.infer<typeof MessageRoleSchema>;

/**
 * `completed`, or `failed`: an agent reply whose turn failed or was cut short by a crash (its `error`
 * says why; code `interrupted` after a restart).
 */
export const MessageStatusSchema = z.enum(['completed', 'failed']).meta({ id: 'MessageStatus' });
export type MessageStatus = z.infer<typeof MessageStatusSchema>;
