import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import {
  ConversationSchema, EmptyQuery, ErrorSchema, HandoffRequestSchema, MessageSchema, OperatorMessageRequestSchema, TurnCancelSchema,
} from '../schemas.js';
import type { Services } from '../services.js';
import type { HttpResult, RouteDef } from '../types.js';
import { conversationView, messageView } from '../views.js';

const CLOSED = { status: 409, description: 'conversation_closed', schema: ErrorSchema } as const;
const NOT_FOUND = { status: 404, description: 'Unknown conversation', schema: ErrorSchema } as const;

/** The answer to a cancel: 202 while the turn stops, 200 when it had already ended. */
export function cancelResult(conversationId: string, turnId: string, status: 'cancelling' | 'finished'): HttpResult {
  return { kind: 'json', status: status === 'cancelling' ? 202 : 200, body: { conversation_id: conversationId, turn_id: turnId, status } };
}

/**
 * Handoff to people and stopping turns (API.md "Conversations and handoff", "Chat" Stop). Every status
 * change is stored before it is answered; asking for what already is (a takeover of a conversation handed
 * off, a resolve of an active one) answers 200 with the conversation unchanged.
 */
export function handoffRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'POST', path: '/v1/conversations/{conversation_id}/handoff', tag: 'Handoff', access: ACCESS.member, body: HandoffRequestSchema, query: EmptyQuery,
      summary: 'Ask for a person: active -> pending_handoff (handoff.requested); a running agent turn stops (done/handoff) and the agent answers no more',
      responses: [{ status: 200, description: 'The conversation', schema: ConversationSchema }, NOT_FOUND, CLOSED],
      async handle({ principal, params, body }: { principal: { orgId: string }; params: Record<string, string>; body: z.infer<typeof HandoffRequestSchema> }) {
        const c = await s.chat.control.requestHandoff(principal.orgId, params.conversation_id!, { by: 'api', reason: body.reason });
        return { kind: 'json', status: 200, body: conversationView(c) };
      },
    },
    {
      method: 'POST', path: '/v1/conversations/{conversation_id}/takeover', tag: 'Handoff', access: ACCESS.member, query: EmptyQuery,
      summary: 'A person takes over: active or pending_handoff -> handed_off (with or without a request)',
      responses: [{ status: 200, description: 'The conversation', schema: ConversationSchema }, NOT_FOUND, CLOSED],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: conversationView(await s.chat.control.takeover(principal.orgId, params.conversation_id!)) };
      },
    },
    {
      method: 'POST', path: '/v1/conversations/{conversation_id}/resolve', tag: 'Handoff', access: ACCESS.member, query: EmptyQuery,
      summary: 'Hand the conversation back to the agent: pending_handoff or handed_off -> active (handoff.resolved)',
      responses: [{ status: 200, description: 'The conversation', schema: ConversationSchema }, NOT_FOUND, CLOSED],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: conversationView(await s.chat.control.resolve(principal.orgId, params.conversation_id!)) };
      },
    },
    {
      method: 'POST', path: '/v1/conversations/{conversation_id}/close', tag: 'Handoff', access: ACCESS.member, query: EmptyQuery,
      summary: 'Close the conversation (conversation.closed): any running turn stops, and chat on it then gets 409 conversation_closed',
      responses: [{ status: 200, description: 'The conversation', schema: ConversationSchema }, NOT_FOUND],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: conversationView(await s.chat.control.close(principal.orgId, params.conversation_id!)) };
      },
    },
    {
      method: 'POST', path: '/v1/conversations/{conversation_id}/messages', tag: 'Handoff', access: ACCESS.member, body: OperatorMessageRequestSchema, query: EmptyQuery,
      summary: "An operator's message to the visitor: stored (role operator) and pushed to the conversation's sockets as token, message, done with role operator",
      responses: [{ status: 201, description: 'The stored message', schema: MessageSchema }, NOT_FOUND, CLOSED],
      async handle({ principal, params, body }: { principal: { orgId: string }; params: Record<string, string>; body: z.infer<typeof OperatorMessageRequestSchema> }) {
        const m = await s.chat.control.postOperatorMessage(principal.orgId, params.conversation_id!, body.content);
        return { kind: 'json', status: 201, body: messageView(m) };
      },
    },
    {
      method: 'POST', path: '/v1/conversations/{conversation_id}/turns/{turn_id}/cancel', tag: 'Chat', access: ACCESS.member, query: EmptyQuery,
      summary: 'Stop a turn: the model call is aborted, the partial text stored as the agent message, and the stream ends with done/cancelled',
      responses: [
        { status: 202, description: 'The turn is stopping', schema: TurnCancelSchema },
        { status: 200, description: 'The turn had already ended', schema: TurnCancelSchema },
        { status: 404, description: 'Unknown turn, or it ended more than PARLEY_TURN_REPLAY_MS ago', schema: ErrorSchema },
      ],
      async handle({ principal, params }) {
        const status = await s.chat.control.cancelTurn(principal.orgId, params.conversation_id!, params.turn_id!);
        return cancelResult(params.conversation_id!, params.turn_id!, status);
      },
    },
  ];
}
