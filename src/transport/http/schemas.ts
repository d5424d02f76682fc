/**
 * The zod schemas of the public API: they validate requests and generate /v1/openapi.json, so the
 * contract and the checks cannot drift (API.md "Operations"). Request objects are strict: unknown
 * fields are refused (API.md "Conventions").
 */
import { z } from 'zod';
import { AgentToolSchema, BUILTIN_TOOL_NAMES, ModelChoiceSchema, SafetySettingsSchema } from '../../vocabulary/agent.js';
import { ConversationStatusSchema } from '../../vocabulary/conversation.js';
import { DocumentErrorCodeSchema, DocumentStatusSchema, TEXT_CONTENT_TYPES } from '../../vocabulary/document.js';
import { MessageRoleSchema, MessageStatusSchema } from '../../vocabulary/message.js';
import { MetadataSchema } from '../../vocabulary/metadata.js';
import { RoleSchema } from '../../vocabulary/role.js';
import { StreamEventSchema } from '../../vocabulary/stream-event.js';
import { CitationSchema, FinishReasonSchema, ToolRunSchema, TurnErrorSchema, TurnTimingSchema, UsageSchema } from '../../vocabulary/turn.js';
import { USAGE_METRICS, USAGE_PERIODS, WEBHOOK_EVENT_TYPES } from '../../vocabulary/webhook.js';

export { CitationSchema, ConversationStatusSchema, StreamEventSchema, ToolRunSchema, UsageSchema };

const id = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[0-9A-Za-z]{1,64}$`), `must be a ${prefix}_ id`);
const time = z.string().describe('RFC 3339 UTC time');

export const ErrorSchema = z.object({
  error: z.object({
    type: z.string(), code: z.string(), message: z.string(), request_id: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
}).meta({ id: 'Error' });

export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().max(100).optional(),
}).strict();

export const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z.object({ data: z.array(item), has_more: z.boolean() }).meta({ id: name });

/** Built-in tools an agent may be given: the knowledge search, and the handoff to a person (API.md "Conversations and handoff"). */
export const TOOL_NAMES = BUILTIN_TOOL_NAMES;

/**
 * An allowed origin of a published agent: `*` (any page), or a serialized origin `scheme://host[:port]`
 * (RFC 6454 section 6.2: no path, no trailing slash), as browsers send it in `Origin`.
 */
export const AllowedOriginSchema = z.union([
  z.literal('*'),
  z.string().max(300).regex(/^https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?$/, 'must be * or an origin like https://shop.example (scheme://host[:port], no path)'),
]);

const agentFields = {
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2000),
  instructions: z.string().max(20_000),
  model: ModelChoiceSchema,
  knowledge_base_ids: z.array(id('kb')).max(20),
  tools: z.array(AgentToolSchema).max(10)
    .refine((tools) => new Set(tools.map((t) => (typeof t === 'string' ? t : t.name))).size === tools.length, 'tool names must be unique')
    .describe('Built-in tool names and HTTP tools ({"type":"http",...}); see docs/agents-and-models.md'),
  safety: SafetySettingsSchema,
  allowed_origins: z.array(AllowedOriginSchema).min(1).max(50)
    .describe('Origins whose pages may use the published agent (CORS and the socket Origin check); ["*"] (default): any'),
};

export const AgentCreateSchema = z.object({
  name: agentFields.name,
  description: agentFields.description.optional(),
  instructions: agentFields.instructions.optional(),
  model: agentFields.model.optional(),
  knowledge_base_ids: agentFields.knowledge_base_ids.optional(),
  tools: agentFields.tools.optional(),
  safety: agentFields.safety.optional(),
  allowed_origins: agentFields.allowed_origins.optional(),
}).strict().meta({ id: 'AgentCreate' });

export const AgentPatchSchema = AgentCreateSchema.partial().strict().meta({ id: 'AgentPatch' });

export const AgentSchema = z.object({
  id: z.string(), name: z.string(), description: z.string(), instructions: z.string(),
  published: z.boolean(), public_key: z.string().nullable(), model: ModelChoiceSchema,
  knowledge_base_ids: z.array(z.string()), tools: z.array(AgentToolSchema),
  safety: z.object({ blocked_phrases: z.array(z.string()), redact_pii: z.boolean(), blocked_message: z.string() }),
  allowed_origins: z.array(z.string()), created_at: time, updated_at: time,
}).meta({ id: 'Agent' });

export const ModelProviderListSchema = z.object({
  data: z.array(z.object({
    id: z.string().describe('what an agent\'s model.provider names: builtin, openai'),
    default_model: z.string().nullable().describe('the model name used when none is chosen (builtin: "builtin"); null when the provider needs one'),
  })),
}).meta({ id: 'ModelProviderList' });
/**
 * An agent as lists show it (API.md "Agents": `GET /v1/agents`): every field of bounded size, without
 * the instructions, tools and safety settings (`GET /v1/agents/{agent_id}` has them), so a page of 100
 * agents stays small whatever their tools hold.
 */
export const AgentSummarySchema = z.object({
  id: z.string(), name: z.string(), description: z.string(), published: z.boolean(), public_key: z.string().nullable(),
  model: ModelChoiceSchema, knowledge_base_ids: z.array(z.string()), allowed_origins: z.array(z.string()), created_at: time, updated_at: time,
}).meta({ id: 'AgentSummary' });

export const PublishedSchema = z.object({ public_key: z.string().describe('pk_...: grants chat with this agent only') }).meta({ id: 'Published' });

export const KnowledgeBaseCreateSchema = z.object({ name: z.string().trim().min(1).max(200) }).strict().meta({ id: 'KnowledgeBaseCreate' });
export const KnowledgeBaseSchema = z.object({
  id: z.string(), name: z.string(),
  document_count: z.number().int().describe('documents of any status'),
  chunk_count: z.number().int().describe('searchable passages of its ready documents'),
  bytes: z.number().int().describe('bytes of the uploaded documents'),
  created_at: time,
}).meta({ id: 'KnowledgeBase' });

export const DocumentJsonSchema = z.object({
  title: z.string().trim().min(1).max(300),
  content: z.string().min(1),
  content_type: z.enum(TEXT_CONTENT_TYPES).default('text/markdown')
    .describe('A text format; PDF and DOCX files are uploaded as a raw body'),
}).strict().meta({ id: 'DocumentCreate' });

export const DocumentQuery = z.object({ title: z.string().trim().min(1).max(300).optional() }).strict();

export const DocumentSchema = z.object({
  id: z.string(), knowledge_base_id: z.string(), title: z.string(), content_type: z.string(),
  status: DocumentStatusSchema,
  error: z.string().nullable().describe('Why a failed document failed, one line for people; null unless failed'),
  error_code: DocumentErrorCodeSchema.nullable().describe('The stable code of `error` (document_too_large, ingestion_timeout, invalid_document, embedding_failed, ingestion_failed); null unless failed'),
  chunk_count: z.number().int(),
  bytes: z.number().int(), created_at: time, updated_at: time,
}).meta({ id: 'Document' });

export const DocumentAcceptedSchema = z.object({ id: z.string(), status: z.literal('processing') }).meta({ id: 'DocumentAccepted' });

export const SearchQuery = z.object({
  q: z.string().trim().min(1).max(2000),
  k: z.coerce.number().int().min(1).max(50).default(5),
}).strict();

export const SearchResultSchema = z.object({
  data: z.array(z.object({
    document_id: z.string(), chunk_id: z.string(), title: z.string(), heading: z.string(), text: z.string(), score: z.number(),
    page: z.number().int().nullable().describe('1-based page the passage starts on (PDF documents); null for formats without pages'),
  })),
}).meta({ id: 'SearchResults' });

export const ChatRequestSchema = z.object({
  message: z.string().min(1).max(32_000),
  stream: z.boolean().default(false),
  conversation_id: id('conv').optional(),
  metadata: MetadataSchema.optional(),
}).strict().meta({ id: 'ChatRequest' });

/** The public chat request (API.md "Chat"): the chat request, plus the visitor token that continues a conversation. */
export const PublicChatRequestSchema = ChatRequestSchema.extend({
  visitor_token: z.string().min(1).max(200).optional().describe('vt_... from the first conversation event; required with conversation_id'),
}).strict().meta({ id: 'PublicChatRequest' });

export const ChatResponseSchema = z.object({
  conversation_id: z.string(), message_id: z.string(), content: z.string(), citations: z.array(CitationSchema),
  tool_runs: z.array(ToolRunSchema), usage: UsageSchema, finish_reason: FinishReasonSchema,
  visitor_token: z.string().optional().describe('Public chat, first message of a conversation: the visitor token that continues it'),
}).meta({ id: 'ChatResponse' });

export const HandoffRequestSchema = z.object({
  reason: z.string().trim().min(1).max(500).optional().describe('Why a person is needed (shown to operators)'),
}).strict().meta({ id: 'HandoffRequest' });

export const OperatorMessageRequestSchema = z.object({ content: z.string().min(1).max(32_000) }).strict().meta({ id: 'OperatorMessageRequest' });

export const TurnCancelSchema = z.object({
  conversation_id: z.string(), turn_id: z.string(),
  status: z.enum(['cancelling', 'finished']).describe('cancelling (202): the turn stops and ends with done/cancelled; finished (200): it had already ended'),
}).meta({ id: 'TurnCancel' });

export const ConversationSchema = z.object({
  id: z.string(), agent_id: z.string(), status: ConversationStatusSchema, metadata: MetadataSchema,
  created_at: time, updated_at: time,
}).meta({ id: 'Conversation' });

export const OrganizationSchema = z.object({
  id: z.string(), name: z.string(), created_at: time,
  retention_days: z.number().int().nullable()
    .describe('conversations with no activity for this many days are erased; null: default_retention_days applies'),
  default_retention_days: z.number().int().nullable().describe('the server\'s default (PARLEY_RETENTION_DAYS); null keeps everything'),
}).meta({ id: 'Organization' });

export const OrganizationPatchSchema = z.object({
  retention_days: z.number().int().min(1).max(36_500).nullable()
    .describe('erase conversations with no activity for this many days (1 to 36500); null: back to the server\'s default'),
}).strict().meta({ id: 'OrganizationPatch' });

export const ConversationListQuery = PageQuery.extend({
  agent_id: z.string().max(100).optional(),
  status: ConversationStatusSchema.optional(),
  exclude_source: z.string().min(1).max(500).optional()
    .describe('leave out conversations whose metadata.source is this, e.g. `playground` (the dashboard\'s agent playground)'),
}).strict();

export const MessageSchema = z.object({
  id: z.string(), conversation_id: z.string(), turn_id: z.string().nullable(),
  role: MessageRoleSchema, content: z.string(), citations: z.array(CitationSchema),
  tool_runs: z.array(ToolRunSchema), usage: UsageSchema.nullable(), status: MessageStatusSchema,
  finish_reason: FinishReasonSchema.nullable(), error: TurnErrorSchema.nullable(),
  timing: TurnTimingSchema.nullable().describe('Agent messages a turn stored (replies and failed replies): where the turn\'s time went (ms from the request\'s arrival); null on every other message'),
  created_at: time,
}).meta({ id: 'Message' });

export const EmptyQuery = z.object({}).strict();

// People sign in (API.md "Auth endpoints").

export { RoleSchema };

export const LoginSchema = z.object({
  email: z.string().min(1).max(254),
  // The policy (8..128 characters) counts code points; 256 UTF-16 units hold any 128 of them. A longer
  // value cannot be a password, so it is refused before any hashing.
  password: z.string().min(1).max(256),
}).strict().meta({ id: 'LoginRequest' });

// Any string up to 2 KiB is taken, so that a wrong kind of token (an access token, say) gets the 401 of a
// wrong token rather than a 400.
export const RefreshSchema = z.object({ refresh_token: z.string().min(1).max(2048) }).strict().meta({ id: 'RefreshRequest' });
export const LogoutSchema = z.object({ refresh_token: z.string().min(1).max(2048) }).strict().meta({ id: 'LogoutRequest' });

export const UserSchema = z.object({ id: z.string(), email: z.string() }).meta({ id: 'User' });
export const UserOrganizationSchema = z.object({ id: z.string(), name: z.string(), role: RoleSchema }).meta({ id: 'UserOrganization' });

export const SessionSchema = z.object({
  access_token: z.string().describe('JWT (EdDSA, typ at+jwt), valid expires_in seconds'),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int().describe('seconds (900)'),
  refresh_token: z.string().describe('rt_..., single use: store the new one after each refresh'),
  user: UserSchema,
  organizations: z.array(UserOrganizationSchema),
}).meta({ id: 'Session' });

/** An invitation as its organization sees it (the answer of `POST /v1/members`, API.md "Auth endpoints"). */
export const InvitationSchema = z.object({
  id: z.string().describe('inv_...'), email: z.string(), role: RoleSchema,
  status: z.enum(['pending', 'accepted', 'declined', 'replaced']).describe('pending until the invitee accepts or declines it, or a newer invitation replaces it'),
  created_at: time, expires_at: time.describe('7 days after created_at: it can no longer be accepted after this'),
}).meta({ id: 'Invitation' });

/** A pending invitation as its invitee sees it (`GET /v1/me`): with the organization. */
export const PendingInvitationSchema = InvitationSchema.extend({
  organization: z.object({ id: z.string(), name: z.string() }),
}).meta({ id: 'PendingInvitation' });

export const InvitationAnswerSchema = z.object({
  id: z.string(), status: z.enum(['accepted', 'declined']),
  organization: UserOrganizationSchema.optional().describe('accepted: the organization the person now belongs to, with their role there'),
}).meta({ id: 'InvitationAnswer' });

export const MeSchema = z.object({
  user: UserSchema, organizations: z.array(UserOrganizationSchema),
  invitations: z.array(PendingInvitationSchema).describe('pending invitations to organizations, newest first (at most 50): accept or decline them'),
}).meta({ id: 'Me' });

export const SocketTicketSchema = z.object({
  ticket: z.string().describe('wst_..., single use'), expires_in: z.number().int().describe('seconds (60)'),
}).meta({ id: 'SocketTicket' });

export const ApiKeySchema = z.object({
  id: z.string(), name: z.string(), last4: z.string(), created_at: time,
  revoked_at: time.nullable(), expires_at: time.nullable().describe('end of the grace period of a rotated key'),
}).meta({ id: 'ApiKey' });

export const ApiKeyWithSecretSchema = ApiKeySchema.extend({ secret: z.string().describe('sk_..., shown only in this response') }).meta({ id: 'ApiKeyWithSecret' });

export const ApiKeyCreateSchema = z.object({ name: z.string().trim().min(1).max(200) }).strict().meta({ id: 'ApiKeyCreate' });

export const ApiKeyRotateSchema = z.object({
  grace_period_seconds: z.number().int().min(0).max(30 * 24 * 3600).default(0)
    .describe('seconds the old secret keeps working (0: it stops at once; at most 30 days)'),
}).strict().meta({ id: 'ApiKeyRotate' });

export const MemberSchema = z.object({ user_id: z.string(), email: z.string(), role: RoleSchema, created_at: time }).meta({ id: 'Member' });

export const MemberCreateSchema = z.object({ email: z.email().max(254), role: RoleSchema }).strict().meta({ id: 'MemberCreate' });
export const MemberPatchSchema = z.object({ role: RoleSchema }).strict().meta({ id: 'MemberPatch' });

const webhookEventName = z.enum(['*', ...WEBHOOK_EVENT_TYPES] as [string, ...string[]]);
const webhookUrl = z.string().min(1).max(2048).describe('http(s) URL; private, loopback and link-local destinations are refused unless PARLEY_WEBHOOKS_ALLOW_PRIVATE=true');

export const WebhookCreateSchema = z.object({
  url: webhookUrl,
  events: z.array(webhookEventName).min(1).max(20).describe('event names (GET /v1/webhooks/events), or ["*"] for all'),
  description: z.string().max(500).optional(),
}).strict().meta({ id: 'WebhookCreate' });

export const WebhookPatchSchema = z.object({
  url: webhookUrl.optional(),
  events: z.array(webhookEventName).min(1).max(20).optional(),
  description: z.string().max(500).nullable().optional(),
  enabled: z.boolean().optional().describe('true re-enables an endpoint that was disabled (410 Gone, 5 days of failures, or by hand)'),
}).strict().meta({ id: 'WebhookPatch' });

export const WebhookRotateSchema = z.object({
  overlap_seconds: z.number().int().min(0).max(7 * 24 * 3600).default(24 * 3600)
    .describe('seconds the previous secret keeps signing beside the new one (default 24 h; 0: it stops at once)'),
}).strict().meta({ id: 'WebhookRotate' });

export const WebhookEndpointSchema = z.object({
  id: z.string(), url: z.string(), events: z.array(z.string()), description: z.string().nullable(),
  status: z.enum(['enabled', 'disabled']), disabled_reason: z.enum(['gone', 'failing', 'manual']).nullable(),
  failing_since: time.nullable(), previous_secret_expires_at: time.nullable().describe('while set and in the future, the previous secret signs too'),
  created_at: time, updated_at: time,
}).meta({ id: 'WebhookEndpoint' });

export const WebhookEndpointWithSecretSchema = WebhookEndpointSchema.extend({
  secret: z.string().describe('whsec_..., shown only in this response'),
}).meta({ id: 'WebhookEndpointWithSecret' });

export const WebhookEventListSchema = z.object({
  data: z.array(z.object({ name: z.string(), description: z.string() })),
}).meta({ id: 'WebhookEventList' });

const AttemptResponseSchema = z.object({
  status: z.number().int().describe('HTTP status, 0 when no response came'), body: z.string().describe('first 4 KiB of the response body'),
  duration_ms: z.number().int(),
});

export const DeliverySchema = z.object({
  id: z.string(), event_id: z.string(), event_type: z.string(), status: z.enum(['pending', 'succeeded', 'failed']),
  attempt_count: z.number().int(), next_attempt_at: time.nullable(), last_response: AttemptResponseSchema.nullable(),
  last_error: z.string().nullable(), created_at: time,
}).meta({ id: 'WebhookDelivery' });

export const DeliveryWithAttemptsSchema = DeliverySchema.extend({
  attempts: z.array(AttemptResponseSchema.extend({ number: z.number().int(), error: z.string().nullable(), at: time })),
}).meta({ id: 'WebhookDeliveryWithAttempts' });

export const WebhookTestSchema = z.object({ delivery_id: z.string(), event_id: z.string() }).meta({ id: 'WebhookTestQueued' });

export const WebhookRecoverSchema = z.object({
  since: z.iso.datetime({ offset: true }).describe('RFC 3339: re-send the deliveries that failed for good created at or after this time'),
}).strict().meta({ id: 'WebhookRecover' });

export const WebhookRecoveredSchema = z.object({ recovered: z.number().int().describe('deliveries queued again') }).meta({ id: 'WebhookRecovered' });

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a day YYYY-MM-DD').refine((v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)), 'not a calendar day');

export const UsageQuery = z.object({
  from: day.optional().describe('first day (UTC), default 29 days before `to`'),
  to: day.optional().describe('last day (UTC, inclusive), default today'),
  agent_id: id('agt').optional(),
}).strict();

export const UsageReportSchema = z.object({
  from: z.string(), to: z.string(),
  data: z.array(z.object({
    agent_id: z.string(), day: z.string(), input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int(),
    turns: z.number().int().describe('agent replies counted'),
  })),
}).meta({ id: 'UsageReport' });

export const UsageThresholdsSchema = z.object({
  thresholds: z.array(z.object({
    metric: z.enum(USAGE_METRICS), value: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('tokens'),
    period: z.enum(USAGE_PERIODS).describe('UTC calendar day or month'),
  }).strict()).max(20),
}).strict().meta({ id: 'UsageThresholds' });

// OpenAI-compatible endpoints (API.md "OpenAI-compatible", docs/openai-compatible.md). Unlike every other
// request body, these are not strict: OpenAI clients send fields Parley has no use for (sampling
// parameters, client-side tools, ...), and OpenAI's own API accepts them, so unknown fields are dropped.

/** One part of an OpenAI message's content: only `text` parts (and an assistant's `refusal`) carry text Parley uses. */
const ChatCompletionContentPartSchema = z.object({
  type: z.string().max(100),
  text: z.string().max(32_000).optional(),
  refusal: z.string().max(32_000).optional(),
});

export const ChatCompletionMessageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string().max(32_000), z.array(ChatCompletionContentPartSchema).max(100), z.null()]).optional(),
  name: z.string().max(256).optional(),
}).meta({ id: 'ChatCompletionMessage', description: 'A chat message in the OpenAI format; other fields (tool_calls, tool_call_id, ...) are accepted and ignored' });

const openAiMetadata = z.record(z.string().min(1).max(40), z.string().max(500))
  .refine((m) => Object.keys(m).length <= 50, 'at most 50 keys')
  .describe('Stripe\'s metadata rules (at most 50 keys, keys up to 40 characters, string values up to 500). `conversation_id`: continue that conversation; the rest is stored as a new conversation\'s metadata');

export const ChatCompletionRequestSchema = z.object({
  model: z.string().min(1).max(256).describe('An agent id (agt_...) or the exact name of one of the organization\'s agents'),
  messages: z.array(ChatCompletionMessageSchema).min(1).max(1000)
    .describe('The last `user` message is the visitor message. Without a conversation, the user and assistant messages before it are the history the new conversation starts with; `system` and `developer` messages are added after the agent\'s instructions'),
  stream: z.boolean().nullable().optional().describe('true: chat.completion.chunk events, then `data: [DONE]`'),
  stream_options: z.object({ include_usage: z.boolean().nullable().optional() }).nullable().optional()
    .describe('include_usage: a last chunk (empty choices) carries `usage`'),
  n: z.literal(1).nullable().optional().describe('Only one choice is made'),
  metadata: openAiMetadata.nullable().optional(),
}).meta({
  id: 'ChatCompletionRequest',
  description: 'OpenAI\'s chat completions request. Fields not listed (temperature, top_p, max_tokens, max_completion_tokens, stop, seed, presence_penalty, frequency_penalty, logit_bias, logprobs, top_logprobs, tools, tool_choice, parallel_tool_calls, response_format, user, store, service_tier, reasoning_effort, ...) are accepted and ignored: the agent\'s own settings apply.',
});

const OpenAIUsageSchema = z.object({
  prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int(),
}).meta({ id: 'ChatCompletionUsage' });

const ParleyCompletionSchema = z.object({
  conversation_id: z.string().describe('Send it back as metadata.conversation_id (or X-Parley-Conversation-Id) to continue the conversation'),
  message_id: z.string().optional().describe('The stored reply (in a stream: on the chunk with finish_reason)'),
  citations: z.array(CitationSchema).optional().describe('Knowledge-base passages the reply used (in a stream: on the chunk with finish_reason)'),
  tool_runs: z.array(ToolRunSchema).optional().describe('Tools the agent ran on the server during the turn (never `tool_calls`: an OpenAI client would try to run them)'),
  finish_reason: FinishReasonSchema.optional().describe('Parley\'s own finish reason (handoff and cancelled map to `stop` in choices)'),
  timing: TurnTimingSchema.nullable().optional().describe('Where the turn\'s time went (ms from the request\'s arrival); null for a message forwarded to a person'),
  replace: z.string().optional().describe('Streams only: the safety check rewrote the reply after it was streamed; show this text instead'),
}).meta({ id: 'ParleyCompletion' });

export const ChatCompletionSchema = z.object({
  id: z.string().describe('chatcmpl-<turn_id>'), object: z.literal('chat.completion'), created: z.number().int().describe('Unix seconds'),
  model: z.string().describe('The agent id'),
  choices: z.array(z.object({
    index: z.number().int(),
    message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
    logprobs: z.null(),
    finish_reason: z.enum(['stop', 'length', 'content_filter']),
  })),
  usage: OpenAIUsageSchema,
  parley: ParleyCompletionSchema,
}).meta({ id: 'ChatCompletion' });

export const ChatCompletionChunkSchema = z.object({
  id: z.string(), object: z.literal('chat.completion.chunk'), created: z.number().int(), model: z.string(),
  choices: z.array(z.object({
    index: z.number().int(),
    delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
    finish_reason: z.enum(['stop', 'length', 'content_filter']).nullable(),
  })).describe('Empty on the usage chunk'),
  usage: OpenAIUsageSchema.optional().describe('Only on the last chunk, with stream_options.include_usage'),
  parley: ParleyCompletionSchema.optional().describe('On the first chunk (conversation_id) and on the chunk with finish_reason (all of it)'),
}).meta({ id: 'ChatCompletionChunk', description: 'One `data:` line of a streamed completion; `data: [DONE]` ends the stream, `data: {"error":{...}}` ends a failed one' });

export const ModelSchema = z.object({
  id: z.string().describe('The agent id'), object: z.literal('model'), created: z.number().int().describe('Unix seconds: when the agent was created'),
  owned_by: z.string().describe('The organization id'), name: z.string().describe('The agent\'s name (also accepted as `model`)'),
}).meta({ id: 'Model' });

export const ModelListSchema = z.object({ object: z.literal('list'), data: z.array(ModelSchema) }).meta({ id: 'ModelList' });
