import { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import type { AgentRecord } from '../../../store/records.js';
import { chatCompletion, ChatCompletionChunks, completionId } from '../openai/completion.js';
import { completionTurn, CONVERSATION_HEADER } from '../openai/request.js';
import { collectReply, oneShotResult } from '../one-shot.js';
import {
  ChatCompletionChunkSchema, ChatCompletionRequestSchema, ChatCompletionSchema, ErrorSchema, ModelListSchema, ModelSchema,
} from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';

/** Query strings are not part of OpenAI's requests; any is accepted and ignored, like unknown body fields. */
const IgnoredQuery = z.object({});

/** `GET /v1/models` item of an agent (the OpenAI model object, and the agent's name). */
export function modelView(a: AgentRecord) {
  return { id: a.id, object: 'model' as const, created: Math.floor(Date.parse(a.created_at) / 1000), owned_by: a.org_id, name: a.name };
}

const TAG = 'OpenAI-compatible';

/**
 * The OpenAI-compatible endpoints (API.md "OpenAI-compatible", docs/openai-compatible.md): chat
 * completions over the same turn as `POST /v1/agents/{agent_id}/chat` (ChatService.send: admission
 * control, storage, usage and webhooks alike), and the organization's agents as models.
 */
export function openAIRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'POST', path: '/v1/chat/completions', tag: TAG, access: ACCESS.member, body: ChatCompletionRequestSchema, query: IgnoredQuery,
      headerParams: [{ name: 'X-Parley-Conversation-Id', required: false, description: 'conv_...: continue that conversation (the same as metadata.conversation_id)' }],
      summary: 'OpenAI chat completions with an agent as the model: one-shot (chat.completion) or streamed (chat.completion.chunk, then data: [DONE])',
      responses: [
        { status: 200, description: 'One-shot completion (stream false or absent), with a `Server-Timing` header', schema: ChatCompletionSchema },
        { status: 200, description: 'Streamed completion (stream true): `data: <chunk>` events, then `data: [DONE]`', schema: ChatCompletionChunkSchema, contentType: 'text/event-stream' },
        { status: 400, description: 'validation_failed: no user message, a non-text content part, n other than 1, a malformed conversation id', schema: ErrorSchema },
        { status: 404, description: 'model_not_found: `model` names no agent of the organization; not_found: no such conversation of that agent', schema: ErrorSchema },
        { status: 409, description: 'conversation_closed or turn_in_progress', schema: ErrorSchema },
        { status: 503, description: 'overloaded (admission control; see Retry-After) or shutting_down', schema: ErrorSchema },
        { status: 502, description: 'model_unavailable (one-shot)', schema: ErrorSchema },
        { status: 504, description: 'model_timeout (one-shot)', schema: ErrorSchema },
      ],
      async handle({ req, principal, body }: { req: { arrivedAt: number; headers: Record<string, string> }; principal: { orgId: string }; body: z.infer<typeof ChatCompletionRequestSchema> }) {
        const turn = completionTurn(body, req.headers[CONVERSATION_HEADER]);
        const agent = await s.agents.byModel(principal.orgId, body.model);
        const channel = await s.chat.send(
          principal.orgId, agent.id, { message: turn.message, conversation_id: turn.conversationId, metadata: turn.metadata }, 'api',
          { arrivedAt: req.arrivedAt, history: turn.history, ...(turn.clientInstructions === undefined ? {} : { clientInstructions: turn.clientInstructions }) },
        );
        const who = { id: completionId(channel.turnId), created: Math.floor(Date.now() / 1000), model: agent.id };
        if (turn.stream) return { kind: 'sse', channel, from: 'origin', framer: new ChatCompletionChunks(who, channel.conversationId, turn.includeUsage) };
        const { reply, timing } = await collectReply(channel);
        return oneShotResult(chatCompletion(who, reply, timing), timing);
      },
    },
    {
      method: 'GET', path: '/v1/models', tag: TAG, access: ACCESS.member, query: IgnoredQuery,
      summary: "The organization's agents as OpenAI models, newest first (not paged)",
      responses: [{ status: 200, description: 'Models', schema: ModelListSchema }],
      async handle({ principal }) {
        return { kind: 'json', status: 200, body: { object: 'list', data: (await s.agents.listAll(principal.orgId)).map(modelView) } };
      },
    },
    {
      method: 'GET', path: '/v1/models/{model}', tag: TAG, access: ACCESS.member, query: IgnoredQuery,
      summary: 'One agent as an OpenAI model, by agent id or exact name',
      responses: [{ status: 200, description: 'The model', schema: ModelSchema }, { status: 404, description: 'model_not_found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: modelView(await s.agents.byModel(principal.orgId, params.model!)) };
      },
    },
  ];
}
