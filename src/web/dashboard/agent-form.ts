/**
 * The agent editor's form as data (pages/agent-editor.tsx draws it): the form state of an agent, the
 * request body it saves, the client-side check of a tool's JSON Schema, and where the server's
 * `validation_failed` messages go. No DOM, so it is tested in Node (test/unit/agent-form.test.ts).
 */
import type { components } from '../api-types.js';

type Schemas = components['schemas'];
type Agent = Schemas['Agent'];
/** A refused field of `validation_failed` (api.ts FieldError). */
type FieldError = { path: string; message: string };

export type HttpTool = Schemas['HttpTool'];

/** API.md "Agents": the longest instructions, in characters (the server's limit). */
export const INSTRUCTIONS_MAX = 20_000;
export const BUILTIN_TOOLS = [
  { name: 'search_knowledge', label: 'Search the knowledge bases', hint: 'The agent looks things up in its knowledge bases before it answers.' },
  { name: 'handoff_to_human', label: 'Hand off to a person', hint: 'The agent can pass the conversation to an operator.' },
] as const;
export const METHODS: ReadonlyArray<HttpTool['method']> = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** An HTTP tool as edited: its JSON Schema as text, so that a half-typed schema can be shown and fixed. */
export interface ToolDraft {
  key: number;
  name: string;
  description: string;
  url: string;
  method: HttpTool['method'];
  parameters: string;
  /** Kept as it was: set through the API only (header names to PARLEY_TOOL_SECRET_* variables). */
  headers_from_env: HttpTool['headers_from_env'];
  timeout_ms: number;
}

/** The form's state. Lists of phrases and origins are edited one per line. */
export interface Draft {
  name: string;
  description: string;
  instructions: string;
  provider: string;
  model: string;
  knowledgeBaseIds: string[];
  builtinTools: string[];
  httpTools: ToolDraft[];
  blockedPhrases: string;
  redactPii: boolean;
  blockedMessage: string;
  allowedOrigins: string;
}

let toolKeys = 0;
/** A key for a new tool row (rows keep their key while edited). */
export const newToolKey = () => ++toolKeys;
/** The schema a new HTTP tool starts with: an object with no properties. */
export const EMPTY_SCHEMA = '{\n  "type": "object",\n  "properties": {},\n  "required": []\n}';

/** The form's state for `agent`, or the defaults of a new agent (those of POST /v1/agents). */
export function draftOf(agent: Agent | null): Draft {
  if (agent === null) {
    return {
      name: '', description: '', instructions: '', provider: 'builtin', model: 'builtin', knowledgeBaseIds: [], builtinTools: ['search_knowledge'],
      httpTools: [], blockedPhrases: '', redactPii: true, blockedMessage: "I'm sorry, I can't help with that.", allowedOrigins: '*',
    };
  }
  return {
    name: agent.name, description: agent.description, instructions: agent.instructions, provider: agent.model.provider, model: agent.model.name,
    knowledgeBaseIds: agent.knowledge_base_ids,
    builtinTools: agent.tools.filter((t): t is 'search_knowledge' | 'handoff_to_human' => typeof t === 'string'),
    httpTools: agent.tools.filter((t): t is HttpTool => typeof t !== 'string').map((t) => ({
      key: newToolKey(), name: t.name, description: t.description, url: t.url, method: t.method,
      parameters: JSON.stringify(t.parameters, null, 2), headers_from_env: t.headers_from_env, timeout_ms: t.timeout_ms,
    })),
    blockedPhrases: agent.safety.blocked_phrases.join('\n'), redactPii: agent.safety.redact_pii, blockedMessage: agent.safety.blocked_message,
    allowedOrigins: agent.allowed_origins.join('\n'),
  };
}

/** Lines of a textarea, trimmed, without the empty ones. */
export const lines = (text: string) => text.split('\n').map((l) => l.trim()).filter((l) => l !== '');

/**
 * Why `text` is not a usable JSON Schema of a tool's arguments, or null when it is: it must parse as
 * JSON and be an object schema (the server also compiles it with ajv when the agent is saved).
 */
export function schemaProblem(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `Not valid JSON: ${(err as Error).message}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'The schema must be a JSON object.';
  const type = (value as { type?: unknown }).type;
  if (type !== undefined && type !== 'object') return 'The arguments are an object: the schema\'s "type" must be "object".';
  return null;
}

/** The request body of the form: what POST creates or PATCH sets (every field, so the agent is as shown). */
export function bodyOf(d: Draft): Schemas['AgentCreate'] {
  const tools: Schemas['AgentCreate']['tools'] = [
    ...BUILTIN_TOOLS.filter((t) => d.builtinTools.includes(t.name)).map((t) => t.name),
    ...d.httpTools.map((t): HttpTool => ({
      type: 'http', name: t.name.trim(), description: t.description.trim(), url: t.url.trim(), method: t.method,
      parameters: JSON.parse(t.parameters) as HttpTool['parameters'], timeout_ms: t.timeout_ms,
      ...(t.headers_from_env === undefined ? {} : { headers_from_env: t.headers_from_env }),
    })),
  ];
  return {
    name: d.name, description: d.description, instructions: d.instructions, model: { provider: d.provider, name: d.model.trim() },
    knowledge_base_ids: d.knowledgeBaseIds, tools,
    safety: { blocked_phrases: lines(d.blockedPhrases), redact_pii: d.redactPii, blocked_message: d.blockedMessage },
    allowed_origins: lines(d.allowedOrigins),
  };
}

/**
 * The server's message for one field (from `validation_failed`'s `errors`), by the path of the request
 * body: `name`, `tools.1.url`, or `tools[1].url` as the tool checks name it.
 */
export function fieldMessage(fields: readonly FieldError[], path: string): string | undefined {
  const normal = (p: string) => p.replace(/\[(\d+)\]/g, '.$1');
  const hits = fields.filter((f) => normal(f.path) === path || normal(f.path).startsWith(`${path}.`));
  return hits.length === 0 ? undefined : hits.map((f) => f.message).join('; ');
}
