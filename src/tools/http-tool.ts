/**
 * HTTP tools (docs/agents-and-models.md "HTTP tools"): an agent's own tool that calls a customer's HTTP
 * endpoint with the model's arguments. The arguments are checked against the tool's JSON Schema (ajv)
 * before anything is sent; the request goes through the outbound guard (src/net/outbound-guard.ts: only
 * public addresses unless private networks are allowed; redirects are never followed); the response body
 * is read up to {@link MAX_TOOL_RESPONSE_BYTES} and handed back to the model. Header secrets come from the
 * server's `PARLEY_TOOL_SECRET_*` variables only and are never part of an outcome, an error or a log line.
 */
import { createRequire } from 'node:module';
import type { Ajv as AjvInstance, ValidateFunction } from 'ajv';
import type { Agent } from 'undici';
import { request } from 'undici';
import { AppError } from '../errors/app-error.js';
import { checkDestinationUrl, DESTINATION_REFUSED_MESSAGE, destinationRefusedIn } from '../net/outbound-guard.js';
import type { HttpTool } from '../vocabulary/agent.js';
import type { ModelToolSpec } from '../models/port.js';

/** Cap on the response body handed to the model, bytes (64 KiB); the rest is not read. */
export const MAX_TOOL_RESPONSE_BYTES = 64 * 1024;

/** Compiled argument validators by schema text; bounded (agents are few, their tools change rarely). */
const validators = new Map<string, ValidateFunction>();
const MAX_VALIDATORS = 1000;
/**
 * The one ajv instance (every error listed, formats unknown to it ignored rather than fatal, no type
 * coercion), loaded at the first HTTP tool: ajv costs about 8 MiB of memory, which a server whose agents
 * have no HTTP tool never pays (start RSS is a benchmarked row).
 */
let ajvInstance: AjvInstance | undefined;
function ajv(): AjvInstance {
  if (ajvInstance === undefined) {
    const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
    ajvInstance = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  }
  return ajvInstance;
}

/**
 * The compiled validator of a tool's `parameters` (cached by the schema's JSON text). Throws AppError
 * `validation_failed` with `path` when the schema does not compile (ajv's message), or when it does not
 * describe an object (`type` must be `"object"`, as the model tool-calling format requires).
 */
export function compileParameters(schema: Record<string, unknown>, path = 'parameters'): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = validators.get(key);
  if (hit !== undefined) return hit;
  if (schema.type !== 'object') {
    throw new AppError('validation_failed', `${path} must be a JSON Schema with "type": "object".`, { errors: [{ path, message: 'type must be "object"' }] });
  }
  let validate: ValidateFunction;
  try {
    validate = ajv().compile(schema);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new AppError('validation_failed', `${path} is not a valid JSON Schema: ${message}`, { errors: [{ path, message }] });
  }
  if (validators.size >= MAX_VALIDATORS) validators.clear();
  validators.set(key, validate);
  return validate;
}

/**
 * Checks an HTTP tool before it is stored (agent create and patch): its parameters compile
 * ({@link compileParameters}) and its URL is an http(s) URL without credentials and, unless
 * `allowPrivate`, not a private, loopback or reserved IP literal or `localhost` (names are checked again
 * at every connection). `path` prefixes error paths, e.g. `tools[2]`. Throws AppError `validation_failed`.
 */
export function checkHttpTool(tool: HttpTool, allowPrivate: boolean, path: string): void {
  compileParameters(tool.parameters, `${path}.parameters`);
  checkDestinationUrl(tool.url, allowPrivate, `${path}.url`);
}

/** The tool as offered to models. */
export function httpToolSpec(tool: HttpTool): ModelToolSpec {
  return { name: tool.name, description: tool.description, parameters: tool.parameters };
}

/** What one call of an HTTP tool came to. */
export interface HttpToolOutcome {
  /** Handed to the model (JSON-serializable): `{status, content_type, body, truncated}` or `{error}`. */
  output: unknown;
  is_error: boolean;
  /**
   * `succeeded` (a 2xx answer) or `failed` (arguments that break the schema, with nothing sent and an
   * error starting `invalid arguments`; any other answer; an unreachable, refused or slow endpoint; a
   * missing secret).
   */
  status: 'succeeded' | 'failed';
  /** The HTTP status of the answer; null when none came. */
  http_status: number | null;
  /**
   * Why it failed, for the record (no secret ever appears here); null on success. The tenant sees it (and a
   * visitor may, through the model's reply), so it never names an address the tool's host resolved to: a
   * refused destination is `destination refused: private address`.
   */
  error: string | null;
  /** For the operator's log only: a refused destination's name and resolved address (undefined otherwise). */
  detail?: string | undefined;
  duration_ms: number;
  /** Bytes of the response body read (at most MAX_TOOL_RESPONSE_BYTES). */
  response_bytes: number;
}

/** What an HTTP tool call needs from the server. */
export interface HttpToolContext {
  /** The guarded undici Agent (createGuardedAgent) every tool request goes through. */
  dispatcher: Agent;
  /** `PARLEY_TOOL_SECRET_*` name -> value (config.tools.secrets). */
  secrets: ReadonlyMap<string, string>;
  /** Aborts the call when the turn is cancelled. */
  signal: AbortSignal;
}

function argsToQuery(url: URL, args: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const item of v) url.searchParams.append(k, typeof item === 'object' ? JSON.stringify(item) : String(item));
    else url.searchParams.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
}

/**
 * The error text of a failed call: the timeout, a refused destination (DESTINATION_REFUSED_MESSAGE, its
 * detail kept apart for the log), or the first error code of the cause chain. Never an error message:
 * Node's and undici's name the address connected to.
 */
function describeFailure(err: unknown, timeoutMs: number, timedOut: boolean): { error: string; detail?: string } {
  if (timedOut) return { error: `the endpoint did not answer within ${timeoutMs} ms` };
  const refused = destinationRefusedIn(err);
  if (refused !== undefined) return { error: DESTINATION_REFUSED_MESSAGE, detail: refused.detail };
  let e: unknown = err;
  for (let i = 0; i < 5 && e !== null && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED') return { error: `request failed: ${code}` };
    e = (e as { cause?: unknown }).cause;
  }
  return { error: 'request failed' };
}

/**
 * Runs one call of an HTTP tool with the model's raw JSON `rawArgs`. Never throws: every failure is an
 * outcome the model can read (`is_error: true`).
 *
 * - `rawArgs` must be a JSON object that the tool's schema accepts, else `failed` with the error
 *   `invalid arguments: <ajv's messages>` (nothing is sent).
 * - Each `headers_from_env` header must have its server variable set, else `failed` (the variable is
 *   named, its value never).
 * - GET and DELETE put the arguments in the query string (objects as JSON text); POST, PUT and PATCH send
 *   them as a JSON body. Headers: `accept: application/json, text/*;q=0.9`, `user-agent: Parley-Tool/1`.
 * - The whole call (connect, headers and body) is bounded by `timeout_ms`; the turn's `signal` aborts it.
 * - The answer: `{status, content_type, body, truncated}`, `body` parsed as JSON when the content type
 *   says JSON and the body was read whole, else text (UTF-8) of at most MAX_TOOL_RESPONSE_BYTES bytes.
 *   A non-2xx status is `failed` (is_error) with the same shape, so the model sees what the endpoint said.
 */
export async function runHttpTool(tool: HttpTool, rawArgs: string, ctx: HttpToolContext): Promise<HttpToolOutcome> {
  const started = performance.now();
  const done = (o: Omit<HttpToolOutcome, 'duration_ms'>): HttpToolOutcome => ({ ...o, duration_ms: Math.round(performance.now() - started) });
  let args: unknown;
  try { args = JSON.parse(rawArgs || '{}'); } catch {
    const error = 'invalid arguments: not valid JSON';
    return done({ output: { error }, is_error: true, status: 'failed', http_status: null, error, response_bytes: 0 });
  }
  let validate: ValidateFunction;
  try {
    validate = compileParameters(tool.parameters);
  } catch (err) {
    // Only a tool stored without the save-time check (an older version, a direct store write) gets here.
    const error = `the tool's parameters schema is invalid: ${err instanceof Error ? err.message : String(err)}`;
    return done({ output: { error }, is_error: true, status: 'failed', http_status: null, error, response_bytes: 0 });
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args) || !validate(args)) {
    const details = typeof args !== 'object' || args === null || Array.isArray(args)
      ? 'arguments must be a JSON object'
      : (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`).join('; ');
    const error = `invalid arguments: ${details}`;
    return done({ output: { error }, is_error: true, status: 'failed', http_status: null, error, response_bytes: 0 });
  }
  const headers: Record<string, string> = { accept: 'application/json, text/*;q=0.9', 'user-agent': 'Parley-Tool/1' };
  for (const [header, variable] of Object.entries(tool.headers_from_env ?? {})) {
    const value = ctx.secrets.get(variable);
    if (value === undefined) {
      const error = `the server variable ${variable} for header ${header} is not set`;
      return done({ output: { error }, is_error: true, status: 'failed', http_status: null, error, response_bytes: 0 });
    }
    headers[header.toLowerCase()] = value;
  }
  const url = new URL(tool.url);
  const hasBody = tool.method === 'POST' || tool.method === 'PUT' || tool.method === 'PATCH';
  if (hasBody) headers['content-type'] = 'application/json';
  else argsToQuery(url, args as Record<string, unknown>);

  const timeout = AbortSignal.timeout(tool.timeout_ms);
  const signal = AbortSignal.any([timeout, ctx.signal]);
  try {
    const res = await request(url, {
      method: tool.method, headers, dispatcher: ctx.dispatcher, signal,
      ...(hasBody ? { body: JSON.stringify(args) } : {}),
      headersTimeout: tool.timeout_ms, bodyTimeout: tool.timeout_ms,
    });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let truncated = false;
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      const room = MAX_TOOL_RESPONSE_BYTES - bytes;
      if (buf.length > room) {
        truncated = true;
        chunks.push(buf.subarray(0, room));
        bytes += room;
        break;
      }
      chunks.push(buf);
      bytes += buf.length;
    }
    const contentType = String(res.headers['content-type'] ?? '');
    let text = Buffer.concat(chunks).toString('utf8');
    if (truncated) text = text.replace(/\uFFFD$/, '');
    let body: unknown = text;
    if (!truncated && /\bjson\b/i.test(contentType) && text.length > 0) {
      try { body = JSON.parse(text); } catch { body = text; }
    }
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return done({
      output: { status: res.statusCode, content_type: contentType, body, truncated },
      is_error: !ok, status: ok ? 'succeeded' : 'failed', http_status: res.statusCode,
      error: ok ? null : `the endpoint answered ${res.statusCode}`, response_bytes: bytes,
    });
  } catch (err) {
    const { error, detail } = ctx.signal.aborted ? { error: 'the turn was cancelled', detail: undefined } : describeFailure(err, tool.timeout_ms, timeout.aborted);
    return done({ output: { error }, is_error: true, status: 'failed', http_status: null, error, response_bytes: 0, ...(detail === undefined ? {} : { detail }) });
  }
}
