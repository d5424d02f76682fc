/** Agent vocabulary (API.md "Agents"): defined once, zod first. */
import { z } from 'zod';

/**
 * Settings of the safety check that runs on an agent's finished reply (src/moderation/safety-check.ts).
 * `blocked_phrases`: phrases that block the whole reply (matched case-insensitively, as whole words, on
 * NFKC text); `redact_pii`: replace e-mail addresses, Luhn-valid card numbers and API-key-like secrets
 * with placeholders; `blocked_message`: the whole reply when a blocked phrase fires.
 */
export const SafetySettingsSchema = z.object({
  blocked_phrases: z.array(z.string().min(1).max(200)).max(200).default([]),
  redact_pii: z.boolean().default(true),
  blocked_message: z.string().min(1).max(2000).default("I'm sorry, I can't help with that."),
}).strict().meta({ id: 'SafetySettings' });
export type SafetySettings = z.output<typeof SafetySettingsSchema>;

/** An agent's model: a provider configured on the server (`builtin`, `openai`) and its model name. */
export const ModelChoiceSchema = z.object({
  provider: z.string().min(1).max(64),
  name: z.string().min(1).max(200),
}).strict().meta({ id: 'ModelChoice' });
export type ModelChoice = z.infer<typeof ModelChoiceSchema>;

/** Names of the tools Parley itself provides (API.md "Agents", "Conversations and handoff"). */
export const BUILTIN_TOOL_NAMES = ['search_knowledge', 'handoff_to_human'] as const;

/** Methods an HTTP tool may use. GET and DELETE send the arguments as the query string, the others as a JSON body. */
export const HTTP_TOOL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Prefix of the server environment variables an HTTP tool's `headers_from_env` may name. Only these are
 * readable by tools, so an API caller can never point a tool at another server secret (such as
 * PARLEY_OPENAI_API_KEY) and have it sent to a URL of their choice.
 */
export const TOOL_SECRET_ENV_PREFIX = 'PARLEY_TOOL_SECRET_';

/**
 * An HTTP tool of an agent (docs/agents-and-models.md "HTTP tools"): the model sees `name`,
 * `description` and `parameters` (a JSON Schema of the arguments object, checked to compile with ajv when
 * the agent is saved); a call sends the validated arguments to `url` with `method` and the headers named
 * in `headers_from_env` (header name -> name of a `PARLEY_TOOL_SECRET_*` server variable; the value never
 * travels through the API), and fails after `timeout_ms` (ms, default 10,000).
 */
/** Longest `parameters` of an HTTP tool, characters of its JSON (a tool's schema is a few KiB at most). */
export const MAX_TOOL_PARAMETERS_CHARS = 16_384;

export const HttpToolSchema = z.object({
  type: z.literal('http'),
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or - (the model function-name rule)')
    .refine((n) => !(BUILTIN_TOOL_NAMES as readonly string[]).includes(n), 'is the name of a built-in tool'),
  description: z.string().min(1).max(1024),
  url: z.string().min(1).max(2048),
  method: z.enum(HTTP_TOOL_METHODS),
  parameters: z.record(z.string(), z.unknown())
    .refine((p) => JSON.stringify(p).length <= MAX_TOOL_PARAMETERS_CHARS, `must be at most ${MAX_TOOL_PARAMETERS_CHARS} characters as JSON`)
    .describe('JSON Schema (draft 2020-12 or 07) of the arguments object, at most 16384 characters as JSON'),
  headers_from_env: z.record(
    z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'must be an HTTP header name'),
    z.string().regex(new RegExp(`^${TOOL_SECRET_ENV_PREFIX}[A-Z0-9_]{1,100}$`), `must name a server variable starting with ${TOOL_SECRET_ENV_PREFIX}`),
  ).refine((h) => Object.keys(h).length <= 20, 'must name at most 20 headers').meta({ maxProperties: 20 }).optional(),
  timeout_ms: z.number().int().min(100).max(60_000).default(10_000),
}).strict().meta({ id: 'HttpTool' });
export type HttpTool = z.output<typeof HttpToolSchema>;

/** One tool of an agent: a built-in tool by name, or an HTTP tool. */
export const AgentToolSchema = z.union([z.enum(BUILTIN_TOOL_NAMES), HttpToolSchema]);
export type AgentTool = z.output<typeof AgentToolSchema>;
