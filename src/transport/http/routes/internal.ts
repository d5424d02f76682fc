/**
 * The routes Parley processes serve each other (DESIGN.md "Several processes"), under `/internal/v1`:
 * only a request signed with the cluster secret gets in (src/cluster/internal-auth.ts; anything else is a
 * 404, as for a path that does not exist), and they are not part of the public API (not in OpenAPI).
 *
 * - `GET /internal/v1/whoami` -> `{"id"}`: the process answering at this address (a restarted process
 *   answers with a new id: its predecessor is dead).
 * - `GET /internal/v1/metrics`: this process's metrics as JSON, for `GET /metrics` of the whole group.
 * - `POST /internal/v1/chat` `{org_id, agent_id, via, input}`: a chat message forwarded to the owner of its
 *   conversation; answered like `POST /v1/agents/{agent_id}/chat` with `stream: true` (the turn's event
 *   stream from its first event), or with the error; 421 `not_owner` when this process does not own the
 *   conversation (the sender routes again).
 * - `GET /internal/v1/turns/{turn_id}/events`: the event stream of a turn this process runs or ran, from
 *   its first event (404 when it has none).
 * - `GET /internal/v1/conversations/{conversation_id}/turns` -> `{"org_id","turn_ids"}`: the turns of a
 *   conversation this process runs, running one first.
 * - `POST /internal/v1/conversations/{conversation_id}/control` `{org_id, op}` -> `{"result"}`: a handoff,
 *   takeover, resolve, close, operator message or cancel, run by the owner (421 when not the owner).
 */
import { z } from 'zod';
import { NotOwner } from '../../../runtime/placement/remote-turns.js';
import { ACCESS } from '../../../runtime/services/access.js';
import type { ControlOp } from '../../../runtime/conversation-control.js';
import { toAppError } from '../../../errors/app-error.js';
import type { Services } from '../services.js';
import type { HttpResult, RouteDef } from '../types.js';

const ForwardedChatSchema = z.object({
  org_id: z.string().min(1),
  agent_id: z.string().min(1),
  via: z.union([z.literal('api'), z.object({ publicKey: z.string().min(1) }).strict()]),
  input: z.object({
    message: z.string(),
    conversation_id: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    visitor_token: z.string().optional(),
  }).strict(),
  elapsed_ms: z.number().min(0).max(3_600_000).optional(),
  client_instructions: z.string().optional(),
}).strict();

const ControlSchema = z.object({
  org_id: z.string().min(1),
  op: z.discriminatedUnion('op', [
    z.object({ op: z.literal('handoff'), by: z.enum(['api', 'visitor', 'agent']), reason: z.string().optional(), turnId: z.string().optional() }),
    z.object({ op: z.literal('takeover') }),
    z.object({ op: z.literal('resolve') }),
    z.object({ op: z.literal('close') }),
    z.object({ op: z.literal('operator_message'), content: z.string() }),
    z.object({ op: z.literal('cancel'), turnId: z.string() }),
    z.object({ op: z.literal('erase') }),
  ]),
}).strict();

/** 421 Misdirected Request: the sender's idea of the owner is stale; it routes again. */
const NOT_OWNER: HttpResult = { kind: 'json', status: 421, body: { error: { type: 'api_error', code: 'not_owner', message: 'This process does not own the conversation.' } } };

/** The error of an internal request as the sender reads it (remote-turns.ts `errorFrom`). */
function failure(err: unknown): HttpResult {
  if (err instanceof NotOwner) return NOT_OWNER;
  const e = toAppError(err);
  return { kind: 'json', status: e.status, body: { error: e.toBody() }, ...(e.headers === undefined ? {} : { headers: e.headers }) };
}

/** See the module comment. `processId`: this process's id. */
export function internalRoutes(s: Services, processId: () => string): RouteDef[] {
  const common = { tag: 'Internal', access: ACCESS.internal, responses: [] as RouteDef['responses'] };
  return [
    {
      ...common, method: 'GET', path: '/internal/v1/whoami', summary: 'This process',
      handle: () => ({ kind: 'json', status: 200, body: { id: processId() } }),
    },
    {
      ...common, method: 'GET', path: '/internal/v1/metrics', summary: 'This process\'s metrics (prom-client JSON), for the group\'s /metrics',
      async handle() {
        return { kind: 'json', status: 200, body: await s.metricsJson() };
      },
    },
    {
      ...common, method: 'POST', path: '/internal/v1/chat', summary: 'A chat message forwarded to its conversation\'s owner', body: ForwardedChatSchema,
      async handle({ body }: { body: z.infer<typeof ForwardedChatSchema> }) {
        try {
          // The turn's timing counts from the request's arrival at the process that forwarded it.
          const arrivedAt = performance.now() - (body.elapsed_ms ?? 0);
          const channel = await s.chat.send(body.org_id, body.agent_id, body.input, body.via, {
            hereOnly: true, arrivedAt, ...(body.client_instructions ? { clientInstructions: body.client_instructions } : {}),
          });
          return { kind: 'sse', channel, from: 'origin' };
        } catch (err) {
          return failure(err);
        }
      },
    },
    {
      ...common, method: 'GET', path: '/internal/v1/turns/{turn_id}/events', summary: 'A local turn\'s events from its first',
      handle({ params }) {
        const channel = s.chat.localChannel(params.turn_id!);
        if (channel === undefined) return { kind: 'json', status: 404, body: { error: { type: 'not_found_error', code: 'not_found', message: 'No such turn here.' } } };
        return { kind: 'sse', channel, from: 0 };
      },
    },
    {
      ...common, method: 'GET', path: '/internal/v1/conversations/{conversation_id}/turns', summary: 'The running turns of a local conversation',
      handle({ params }) {
        const turns = s.chat.localPendingTurns(params.conversation_id!) ?? [];
        return { kind: 'json', status: 200, body: { org_id: turns[0]?.orgId ?? '', turn_ids: turns.map((t) => t.turnId) } };
      },
    },
    {
      ...common, method: 'POST', path: '/internal/v1/conversations/{conversation_id}/control', summary: 'A change of a conversation, run by its owner', body: ControlSchema,
      async handle({ params, body }: { params: Record<string, string>; body: z.infer<typeof ControlSchema> }) {
        try {
          const result = await s.chat.control.perform(body.org_id, params.conversation_id!, body.op as ControlOp, true);
          return { kind: 'json', status: 200, body: { result } };
        } catch (err) {
          return failure(err);
        }
      },
    },
  ];
}
