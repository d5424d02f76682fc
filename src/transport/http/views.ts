import type { OrganizationSettings } from '../../runtime/services/organization.js';
/**
 * Store records as the API shows them (API.md field names; internal fields such as `org_id` dropped).
 */
import type { IssuedApiKey } from '../../runtime/services/api-keys.js';
import type { Me, Session } from '../../runtime/services/sessions.js';
import type {
  AgentRecord, ApiKeyRecord, ConversationRecord, DeliveryRecord, DeliveryWithAttempts, DocumentRecord, InvitationRecord, KnowledgeBaseRecord, KnowledgeBaseStats, MemberRecord, PendingInvitation,
  MessageRecord, Page, UserRecord, WebhookEndpointRecord,
} from '../../store/records.js';

export function agentView(a: AgentRecord) {
  return {
    id: a.id, name: a.name, description: a.description, instructions: a.instructions, published: a.published,
    public_key: a.public_key, model: a.model, knowledge_base_ids: a.knowledge_base_ids, tools: a.tools,
    safety: a.safety, allowed_origins: a.allowed_origins, created_at: a.created_at, updated_at: a.updated_at,
  };
}

/** An agent in a list (API.md "Agents"): the bounded fields only, no instructions, tools or safety settings. */
export function agentSummaryView(a: AgentRecord) {
  return {
    id: a.id, name: a.name, description: a.description, published: a.published, public_key: a.public_key, model: a.model,
    knowledge_base_ids: a.knowledge_base_ids, allowed_origins: a.allowed_origins, created_at: a.created_at, updated_at: a.updated_at,
  };
}

/** A knowledge base with its counts (a new one has none: zeros). */
export function knowledgeBaseView(kb: KnowledgeBaseRecord & Partial<KnowledgeBaseStats>) {
  return { id: kb.id, name: kb.name, document_count: kb.document_count ?? 0, chunk_count: kb.chunk_count ?? 0, bytes: kb.bytes ?? 0, created_at: kb.created_at };
}

export function documentView(d: DocumentRecord) {
  return {
    id: d.id, knowledge_base_id: d.knowledge_base_id, title: d.title, content_type: d.content_type, status: d.status,
    error: d.error, error_code: d.error_code, chunk_count: d.chunk_count, bytes: d.bytes, created_at: d.created_at, updated_at: d.updated_at,
  };
}

/** `GET /v1/organization` (schemas.ts OrganizationSchema). */
export function organizationView(o: OrganizationSettings) {
  return {
    id: o.organization.id, name: o.organization.name, created_at: o.organization.created_at,
    retention_days: o.retentionDays, default_retention_days: o.defaultRetentionDays,
  };
}

export function conversationView(c: ConversationRecord) {
  return { id: c.id, agent_id: c.agent_id, status: c.status, metadata: c.metadata, created_at: c.created_at, updated_at: c.updated_at };
}

export function messageView(m: MessageRecord) {
  return {
    id: m.id, conversation_id: m.conversation_id, turn_id: m.turn_id, role: m.role, content: m.content,
    citations: m.citations, tool_runs: m.tool_runs, usage: m.usage, status: m.status, finish_reason: m.finish_reason,
    error: m.error, timing: m.timing, created_at: m.created_at,
  };
}

/** A page with each record mapped through `view`. */
export function pageView<T, V>(page: Page<T>, view: (t: T) => V): { data: V[]; has_more: boolean } {
  return { data: page.data.map(view), has_more: page.has_more };
}

/** A person as the API shows them: `{id, email}` (never the password hash). */
export function userView(u: UserRecord) {
  return { id: u.id, email: u.email };
}

/** API.md "Auth endpoints": the body of login and refresh. */
export function sessionView(s: Session) {
  return {
    access_token: s.accessToken, token_type: 'Bearer' as const, expires_in: s.expiresIn, refresh_token: s.refreshToken,
    user: userView(s.user), organizations: s.organizations.map((o) => ({ id: o.id, name: o.name, role: o.role })),
  };
}

/** `GET /v1/me`: the person, `[{id, name, role}]` of their organizations, and their pending invitations. */
export function meView(m: Me, invitations: PendingInvitation[]) {
  return {
    user: userView(m.user), organizations: m.organizations.map((o) => ({ id: o.id, name: o.name, role: o.role })),
    invitations: invitations.map(pendingInvitationView),
  };
}

/** An invitation (API.md "Auth endpoints"): `{id, email, role, status, created_at, expires_at}`. */
export function invitationView(i: InvitationRecord) {
  return { id: i.id, email: i.email, role: i.role, status: i.status, created_at: i.created_at, expires_at: i.expires_at };
}

/** A pending invitation as its invitee sees it: with `organization: {id, name}`. */
export function pendingInvitationView(i: PendingInvitation) {
  return { ...invitationView(i), organization: { id: i.org_id, name: i.org_name } };
}

/** An API key as listed: never the secret or its hash. */
export function apiKeyView(k: ApiKeyRecord) {
  return { id: k.id, name: k.name, last4: k.last4, created_at: k.created_at, revoked_at: k.revoked_at, expires_at: k.expires_at };
}

/** A new or rotated key with its secret (shown once). */
export function issuedApiKeyView(k: IssuedApiKey) {
  return { ...apiKeyView(k.key), secret: k.secret };
}

/** A member of an organization: `{user_id, email, role, created_at}`. */
export function memberView(m: MemberRecord) {
  return { user_id: m.user_id, email: m.email, role: m.role, created_at: m.created_at };
}

/** A webhook endpoint as the API shows it: never the secret (only create and rotate show it, once). */
export function webhookEndpointView(e: WebhookEndpointRecord) {
  return {
    id: e.id, url: e.url, events: e.events, description: e.description, status: e.enabled ? 'enabled' : 'disabled',
    disabled_reason: e.disabled_reason, failing_since: e.failing_since, previous_secret_expires_at: e.previous_secret_expires_at,
    created_at: e.created_at, updated_at: e.updated_at,
  };
}

/** A new or rotated endpoint with its secret (shown once). */
export function webhookEndpointWithSecretView(e: WebhookEndpointRecord) {
  return { ...webhookEndpointView(e), secret: e.secret };
}

/** A delivery as listed (API.md "Webhooks"). */
export function deliveryView(d: DeliveryRecord) {
  return {
    id: d.id, event_id: d.event_id, event_type: d.event_type, status: d.status, attempt_count: d.attempt_count,
    next_attempt_at: d.next_attempt_at, last_response: d.last_response, last_error: d.last_error, created_at: d.created_at,
  };
}

/** A delivery with its attempts, oldest first. */
export function deliveryWithAttemptsView(d: DeliveryWithAttempts) {
  return {
    ...deliveryView(d),
    attempts: d.attempts.map((a) => ({ number: a.number, status: a.status, body: a.body, error: a.error, duration_ms: a.duration_ms, at: a.at })),
  };
}
