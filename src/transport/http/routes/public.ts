import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import { collectReply, oneShotResult } from '../one-shot.js';
import {
  ChatResponseSchema, ConversationSchema, EmptyQuery, ErrorSchema, HandoffRequestSchema, listOf, MessageSchema, PageQuery,
  PublicChatRequestSchema, StreamEventSchema, TurnCancelSchema,
} from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { conversationView, messageView, pageView } from '../views.js';
import { lastSeq } from './chat.js';
import { cancelResult } from './handoff.js';

const VISITOR_TOKEN = { name: 'X-Visitor-Token', required: true, description: 'vt_... from the first conversation event of this conversation' };
const ERRORS = [
  { status: 401, description: 'missing_credentials: no X-Visitor-Token', schema: ErrorSchema },
  { status: 403, description: 'origin_not_allowed: the page\'s Origin is not in the agent\'s allowed_origins', schema: ErrorSchema },
  { status: 404, description: 'not_found: no agent published under this key, or no conversation for this visitor token', schema: ErrorSchema },
  { status: 429, description: 'rate_limited (per client address and per visitor token; see Retry-After)', schema: ErrorSchema },
];

/** The visitor token header, or undefined when absent or blank. */
function tokenOf(headers: Record<string, string>): string | undefined {
  const t = headers['x-visitor-token']?.trim();
  return t === undefined || t === '' ? undefined : t;
}

/**
 * The public endpoints of a published agent (API.md "Chat", "Conversations and handoff", "WebSockets"):
 * no credential but the public key in the path, and the visitor token for one conversation. They take
 * CORS preflights and count against the public rate limits.
 */
export function publicRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'POST', path: '/v1/public/agents/{public_key}/chat', tag: 'Public', access: ACCESS.public, cors: true, body: PublicChatRequestSchema, query: EmptyQuery,
      summary: 'A visitor chats with a published agent: the contract of POST /v1/agents/{agent_id}/chat; a new conversation\'s first event (or one-shot reply) carries its visitor_token',
      responses: [
        { status: 200, description: 'One-shot reply (stream=false), with a `Server-Timing` header', schema: ChatResponseSchema },
        { status: 200, description: 'Event stream (stream=true)', schema: StreamEventSchema, contentType: 'text/event-stream' },
        ...ERRORS,
        { status: 409, description: 'conversation_closed or turn_in_progress', schema: ErrorSchema },
        { status: 503, description: 'overloaded or shutting_down', schema: ErrorSchema },
      ],
      async handle({ req, params, body }: { req: { remoteAddress: string; arrivedAt: number }; params: Record<string, string>; body: z.infer<typeof PublicChatRequestSchema> }) {
        s.public.limit(req.remoteAddress, body.conversation_id === undefined ? undefined : body.visitor_token);
        const channel = await s.public.send(params.public_key!, body, { arrivedAt: req.arrivedAt });
        if (body.stream) return { kind: 'sse', channel, from: 'origin' };
        const { reply, timing } = await collectReply(channel);
        return oneShotResult(reply, timing);
      },
    },
    {
      method: 'GET', path: '/v1/public/agents/{public_key}/conversations/{conversation_id}/messages', tag: 'Public', access: ACCESS.public, cors: true,
      headerParams: [VISITOR_TOKEN], query: PageQuery,
      summary: "The visitor's conversation messages in order (the public twin of GET /v1/conversations/{id}/messages)",
      responses: [{ status: 200, description: 'Messages, oldest first', schema: listOf(MessageSchema, 'MessageList') }, ...ERRORS],
      async handle({ req, params, query }) {
        const token = tokenOf(req.headers);
        s.public.limit(req.remoteAddress, token);
        const page = await s.public.messages(params.public_key!, params.conversation_id!, token, query);
        return { kind: 'json', status: 200, body: pageView(page, messageView) };
      },
    },
    {
      method: 'POST', path: '/v1/public/agents/{public_key}/conversations/{conversation_id}/handoff', tag: 'Public', access: ACCESS.public, cors: true,
      headerParams: [VISITOR_TOKEN], body: HandoffRequestSchema, query: EmptyQuery,
      summary: 'The visitor asks for a person (handoff.requested, requested_by visitor)',
      responses: [{ status: 200, description: 'The conversation', schema: ConversationSchema }, ...ERRORS, { status: 409, description: 'conversation_closed', schema: ErrorSchema }],
      async handle({ req, params, body }: { req: { remoteAddress: string; headers: Record<string, string> }; params: Record<string, string>; body: z.infer<typeof HandoffRequestSchema> }) {
        const token = tokenOf(req.headers);
        s.public.limit(req.remoteAddress, token);
        const c = await s.public.requestHandoff(params.public_key!, params.conversation_id!, token, body.reason);
        return { kind: 'json', status: 200, body: conversationView(c) };
      },
    },
    {
      method: 'GET', path: '/v1/public/agents/{public_key}/conversations/{conversation_id}/turns/{turn_id}/events', tag: 'Public', access: ACCESS.public, cors: true,
      headerParams: [VISITOR_TOKEN, { name: 'Last-Event-ID', required: false, description: '<turn_id>:<seq> of the last event received' }], query: EmptyQuery,
      summary: 'Resume a dropped stream of the visitor\'s conversation after Last-Event-ID (the public twin of .../turns/{turn_id}/events)',
      responses: [{ status: 200, description: 'Event stream', schema: StreamEventSchema, contentType: 'text/event-stream' }, ...ERRORS],
      async handle({ req, params }) {
        const token = tokenOf(req.headers);
        s.public.limit(req.remoteAddress, token);
        const channel = await s.public.replay(params.public_key!, params.conversation_id!, params.turn_id!, token);
        return { kind: 'sse', channel, from: lastSeq(req.headers['last-event-id'], channel.turnId) };
      },
    },
    {
      method: 'POST', path: '/v1/public/agents/{public_key}/conversations/{conversation_id}/turns/{turn_id}/cancel', tag: 'Public', access: ACCESS.public, cors: true,
      headerParams: [VISITOR_TOKEN], query: EmptyQuery,
      summary: 'The visitor stops a turn: done/cancelled, the partial reply stored (the public twin of .../turns/{turn_id}/cancel)',
      responses: [
        { status: 202, description: 'The turn is stopping', schema: TurnCancelSchema },
        { status: 200, description: 'The turn had already ended', schema: TurnCancelSchema },
        ...ERRORS,
      ],
      async handle({ req, params }) {
        const token = tokenOf(req.headers);
        s.public.limit(req.remoteAddress, token);
        const status = await s.public.cancel(params.public_key!, params.conversation_id!, params.turn_id!, token);
        return cancelResult(params.conversation_id!, params.turn_id!, status);
      },
    },
  ];
}
