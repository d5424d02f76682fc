import type { z } from 'zod';
import {
  ChatRequestSchema, ChatResponseSchema, ConversationListQuery, ConversationSchema, EmptyQuery, ErrorSchema, listOf,
  MessageSchema, PageQuery, StreamEventSchema,
} from '../schemas.js';
import { collectReply, oneShotResult } from '../one-shot.js';
import { ACCESS } from '../../../runtime/services/access.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { conversationView, messageView, pageView } from '../views.js';

/** `Last-Event-ID: <turn_id>:<seq>` -> seq, when it names this turn; else 0 (replay from the start). */
export function lastSeq(header: string | undefined, turnId: string): number {
  if (!header) return 0;
  const i = header.lastIndexOf(':');
  if (i < 0 || header.slice(0, i) !== turnId) return 0;
  const n = Number(header.slice(i + 1));
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/** Chat and conversation routes (SPEC.md section 4, API.md "Chat" and "Conversations"). */
export function chatRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'POST', path: '/v1/agents/{agent_id}/chat', tag: 'Chat', access: ACCESS.member, body: ChatRequestSchema, query: EmptyQuery,
      summary: 'Send a message to an agent: one-shot JSON (stream=false) or Server-Sent Events (stream=true)',
      responses: [
        { status: 200, description: 'One-shot reply (stream=false), with a `Server-Timing` header (queued, setup, upstream_first_byte, first_token, total: ms from the request\'s arrival)', schema: ChatResponseSchema },
        { status: 200, description: 'Event stream (stream=true): `id: <turn_id>:<seq>` and `data: <StreamEvent>` per event', schema: StreamEventSchema, contentType: 'text/event-stream' },
        { status: 404, description: 'Unknown agent or conversation', schema: ErrorSchema },
        { status: 409, description: 'conversation_closed or turn_in_progress', schema: ErrorSchema },
        { status: 503, description: 'overloaded (admission control; see Retry-After) or shutting_down', schema: ErrorSchema },
        { status: 502, description: 'model_unavailable (one-shot)', schema: ErrorSchema },
        { status: 504, description: 'model_timeout (one-shot)', schema: ErrorSchema },
      ],
      async handle({ req, principal, params, body }: { req: { arrivedAt: number }; principal: { orgId: string }; params: Record<string, string>; body: z.infer<typeof ChatRequestSchema> }) {
        const channel = await s.chat.send(principal.orgId, params.agent_id!, body, 'api', { arrivedAt: req.arrivedAt });
        if (body.stream) return { kind: 'sse', channel, from: 'origin' };
        const { reply, timing } = await collectReply(channel);
        return oneShotResult(reply, timing);
      },
    },
    {
      method: 'GET', path: '/v1/conversations', tag: 'Conversations', summary: 'List conversations', access: ACCESS.member, query: ConversationListQuery,
      responses: [{ status: 200, description: 'Conversations, newest first', schema: listOf(ConversationSchema, 'ConversationList') }],
      async handle({ principal, query }: { principal: { orgId: string }; query: z.infer<typeof ConversationListQuery> }) {
        const page = await s.conversations.list(principal.orgId, { agent_id: query.agent_id, status: query.status, exclude_source: query.exclude_source }, query);
        return { kind: 'json', status: 200, body: pageView(page, conversationView) };
      },
    },
    {
      method: 'GET', path: '/v1/conversations/{conversation_id}', tag: 'Conversations', summary: 'Get a conversation', access: ACCESS.member, query: EmptyQuery,
      responses: [{ status: 200, description: 'The conversation', schema: ConversationSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: conversationView(await s.conversations.get(principal.orgId, params.conversation_id!)) };
      },
    },
    {
      method: 'DELETE', path: '/v1/conversations/{conversation_id}', tag: 'Conversations', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Erase a conversation for good: its messages, tool runs and replay, and the text of its webhook events and their '
        + 'receivers\' responses (replaced by "[erased]"); usage totals stay; conversation.deleted fires; its sockets close with 4404',
      responses: [{ status: 204, description: 'Erased' }, { status: 404, description: 'Not found (also when already erased)', schema: ErrorSchema }],
      async handle({ principal, params }) {
        await s.chat.control.erase(principal.orgId, params.conversation_id!);
        return { kind: 'empty', status: 204 };
      },
    },
    {
      method: 'GET', path: '/v1/conversations/{conversation_id}/messages', tag: 'Conversations', access: ACCESS.member, query: PageQuery,
      summary: "A conversation's messages in order (the way to recover after a dropped stream, SPEC.md 4 rule 5)",
      responses: [{ status: 200, description: 'Messages, oldest first', schema: listOf(MessageSchema, 'MessageList') }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.conversations.messages(principal.orgId, params.conversation_id!, query), messageView) };
      },
    },
    {
      method: 'GET', path: '/v1/conversations/{conversation_id}/turns/{turn_id}/events', tag: 'Chat', access: ACCESS.member, query: EmptyQuery,
      summary: 'Replay a turn\'s events after Last-Event-ID, then follow it live until it ends (kept PARLEY_TURN_REPLAY_MS after the end)',
      responses: [
        { status: 200, description: 'Event stream', schema: StreamEventSchema, contentType: 'text/event-stream' },
        { status: 404, description: 'Unknown turn, or no longer kept (fetch the messages instead)', schema: ErrorSchema },
      ],
      async handle({ principal, params, req }) {
        const channel = await s.chat.replay(principal.orgId, params.conversation_id!, params.turn_id!);
        return { kind: 'sse', channel, from: lastSeq(req.headers['last-event-id'], channel.turnId) };
      },
    },
  ];
}
