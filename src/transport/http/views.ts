/**
 * Store records as the API shows them (API.md field names; internal fields such as `org_id` dropped).
 */
import type { AgentRecord, ConversationRecord, DocumentRecord, KnowledgeBaseRecord, MessageRecord, Page } from '../../store/records.js';

export function agentView(a: AgentRecord) {
  return {
    id: a.id, name: a.name, description: a.description, instructions: a.instructions, published: a.published,
    public_key: a.public_key, model: a.model, knowledge_base_ids: a.knowledge_base_ids, tools: a.tools,
    safety: a.safety, created_at: a.created_at, updated_at: a.updated_at,
  };
}

export function knowledgeBaseView(kb: KnowledgeBaseRecord) {
  return { id: kb.id, name: kb.name, created_at: kb.created_at };
}

export function documentView(d: DocumentRecord) {
  return {
    id: d.id, knowledge_base_id: d.knowledge_base_id, title: d.title, content_type: d.content_type, status: d.status,
    error: d.error, chunk_count: d.chunk_count, bytes: d.bytes, created_at: d.created_at, updated_at: d.updated_at,
  };
}

export function conversationView(c: ConversationRecord) {
  return { id: c.id, agent_id: c.agent_id, status: c.status, metadata: c.metadata, created_at: c.created_at, updated_at: c.updated_at };
}

export function messageView(m: MessageRecord) {
  return {
    id: m.id, conversation_id: m.conversation_id, turn_id: m.turn_id, role: m.role, content: m.content,
    citations: m.citations, tool_runs: m.tool_runs, usage: m.usage, status: m.status, finish_reason: m.finish_reason,
    error: m.error, created_at: m.created_at,
  };
}

/** A page with each record mapped through `view`. */
export function pageView<T, V>(page: Page<T>, view: (t: T) => V): { data: V[]; has_more: boolean } {
  return { data: page.data.map(view), has_more: page.has_more };
}
