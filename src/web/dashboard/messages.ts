/**
 * Conversations and messages as the API shows them (API.md "Conversations and handoff", "WebSockets"),
 * written again here from the contract (the dashboard imports nothing from the server). Types only, and
 * no DOM, so that the thread logic built on them can be tested in Node.
 */
/** API.md "Conversations and handoff": who answers a conversation now. */
export type ConversationStatus = 'active' | 'pending_handoff' | 'handed_off' | 'closed';

export interface Conversation {
  id: string;
  agent_id: string;
  status: ConversationStatus;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export type MessageRole = 'visitor' | 'agent' | 'operator';

/** A knowledge-base passage an agent reply used (`score`: higher is better). */
export interface Citation {
  document_id: string;
  chunk_id: string;
  title: string;
  snippet: string;
  score: number;
}

/** A tool the agent ran during a turn. */
export interface ToolRun {
  id: string;
  name: string;
  arguments: unknown;
  output: unknown;
  is_error: boolean;
}

/** A stored message (`GET /v1/conversations/{id}/messages`). */
export interface Message {
  id: string;
  conversation_id: string;
  turn_id: string | null;
  role: MessageRole;
  content: string;
  citations: Citation[];
  tool_runs: ToolRun[];
  status: string;
  finish_reason: string | null;
  error: { code: string; message: string } | null;
  created_at: string;
}

/** A frame of a socket (API.md "WebSockets"): JSON objects with a `type`; the other fields depend on it. */
export type Frame = { type: string; [field: string]: unknown };
