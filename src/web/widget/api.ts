/**
 * The widget's calls to Parley's public endpoints (API.md "Chat", "Conversations and handoff",
 * "WebSockets"): the streamed chat (SSE over fetch), the messages of the visitor's conversation, the
 * public handoff, and the listen-only socket's URL. Everything is addressed under the public key; the
 * visitor token is the only credential, sent in `X-Visitor-Token` or in the socket's `auth` frame.
 */
import { createParser } from 'eventsource-parser';
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from '../api-types.js';

type Schemas = components['schemas'];

/**
 * A knowledge-base passage an answer used (API.md "Chat": `citations`), from the generated API types
 * (src/web/api-types.ts, `npm run gen:api`): title, snippet and score, with `heading` and `page` when known.
 */
export type Citation = Schemas['Citation'];

/** A tool run of a stored message (API.md "Conversations and handoff": `tool_runs`). */
export type ToolRun = Schemas['ToolRun'];

/**
 * A stored message, as the public messages twin returns it (every field), or as a socket's catch-up
 * `message` frame carries it (the identifiers, role and content).
 */
export type StoredMessage = Pick<Schemas['Message'], 'id' | 'conversation_id' | 'turn_id' | 'role' | 'content'> & Partial<Schemas['Message']>;

/**
 * One stream event or socket frame (SPEC.md 6.1): the fields of every StreamEvent variant of the API
 * types, optional, since a socket frame (not in the OpenAPI document) can carry a few more; read by `type`.
 */
export interface StreamEvent {
  type: string;
  conversation_id?: string;
  turn_id?: string;
  visitor_token?: string;
  delta?: string;
  tool_call?: Schemas['ToolCall'];
  tool_result?: Schemas['ToolResult'];
  citations?: Citation[];
  message_id?: string;
  finish_reason?: Schemas['FinishReason'];
  error?: Schemas['TurnError'];
  /** On socket frames: `operator` for an operator's push, any role on a stored message frame. */
  role?: Schemas['MessageRole'];
  /** On stored message frames (catch-up). */
  content?: string;
  retry_after?: number;
  /** On `status` frames: the conversation's status after a change. */
  status?: Schemas['ConversationStatus'];
}

/** An API error (API.md "Errors") or a failed request: `status` 0 when the network failed. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/**
 * The public endpoints of one published agent at `base` (Parley's origin, `http://host:port`), called
 * through openapi-fetch with the generated API types.
 */
export class PublicApi {
  private readonly client: Client<paths>;
  private readonly key: { public_key: string };

  constructor(readonly base: string, readonly publicKey: string) {
    this.client = createClient<paths>({ baseUrl: base, fetch: (request) => this.send(request) });
    this.key = { public_key: publicKey };
  }

  /**
   * POST .../chat with `stream: true`; calls `onEvent` with each event (and its SSE seq, from the
   * `id: <turn_id>:<seq>` line) as it arrives, and resolves when the stream ends. Throws ApiError for a
   * non-200 answer (its typed error) or a network failure (status 0); `signal` aborts.
   */
  async chat(
    body: { message: string; conversation_id?: string; visitor_token?: string },
    onEvent: (event: StreamEvent, seq: number) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const { response } = await this.client.POST('/v1/public/agents/{public_key}/chat', {
      params: { path: this.key }, body: { ...body, stream: true }, headers: { accept: 'text/event-stream' }, parseAs: 'stream', signal,
    });
    await readEventStream(response, onEvent);
  }

  /** Every message of the conversation after `after` (all when undefined), oldest first, page by page. */
  async messages(conversationId: string, visitorToken: string, after?: string): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let cursor = after;
    for (;;) {
      const { data: page } = await this.client.GET('/v1/public/agents/{public_key}/conversations/{conversation_id}/messages', {
        params: {
          path: { ...this.key, conversation_id: conversationId },
          query: cursor === undefined ? { limit: 100 } : { limit: 100, after: cursor },
          header: { 'X-Visitor-Token': visitorToken },
        },
      });
      out.push(...page!.data);
      if (!page!.has_more || page!.data.length === 0) return out;
      cursor = page!.data[page!.data.length - 1]!.id;
    }
  }

  /** POST .../handoff: the visitor asks for a person; the conversation's new status. */
  async handoff(conversationId: string, visitorToken: string): Promise<string> {
    const { data } = await this.client.POST('/v1/public/agents/{public_key}/conversations/{conversation_id}/handoff', {
      params: { path: { ...this.key, conversation_id: conversationId }, header: { 'X-Visitor-Token': visitorToken } }, body: {},
    });
    return data!.status;
  }

  /** POST .../turns/{turn_id}/cancel: stops a running turn (its partial reply is stored). */
  async cancel(conversationId: string, turnId: string, visitorToken: string): Promise<void> {
    await this.client.POST('/v1/public/agents/{public_key}/conversations/{conversation_id}/turns/{turn_id}/cancel', {
      params: { path: { ...this.key, conversation_id: conversationId, turn_id: turnId }, header: { 'X-Visitor-Token': visitorToken } },
    });
  }

  /** The listen-only socket of a conversation (`ws:`/`wss:` of the base). */
  listenUrl(conversationId: string): string {
    return `${this.base.replace(/^http/, 'ws')}/v1/public/agents/${encodeURIComponent(this.publicKey)}/conversations/${encodeURIComponent(conversationId)}/ws`;
  }

  /**
   * The fetch under the client: no cookies, CORS; a non-2xx answer becomes an ApiError with the API's
   * code and message, a network failure ApiError(0) (an abort stays an AbortError).
   */
  private async send(request: Request): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(request, { credentials: 'omit', mode: 'cors' });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new ApiError(0, 'network_error', 'Could not reach the chat service.');
    }
    if (res.ok) return res;
    let code = 'http_error';
    let message = `The chat service answered ${res.status}.`;
    try {
      const body = await res.json() as { error?: { code?: string; message?: string } };
      code = body.error?.code ?? code;
      message = body.error?.message ?? message;
    } catch { /* not JSON */ }
    throw new ApiError(res.status, code, message);
  }
}

/**
 * Reads a `text/event-stream` body with eventsource-parser (WHATWG HTML "Server-sent events") and calls
 * `onEvent` with each event's JSON and the seq of its `<turn_id>:<seq>` id (0 when it has none). Throws
 * ApiError(0) when the connection breaks or an event is not JSON.
 */
export async function readEventStream(res: Response, onEvent: (event: StreamEvent, seq: number) => void): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const parser = createParser({
    onEvent(message) {
      const id = message.id ?? '';
      onEvent(JSON.parse(message.data) as StreamEvent, Number(id.slice(id.lastIndexOf(':') + 1)) || 0);
    },
  });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', 'The connection to the chat service dropped.');
  }
}
