/**
 * The widget's calls to Parley's public endpoints (API.md "Chat", "Conversations and handoff",
 * "WebSockets"): the streamed chat (SSE over fetch), the messages of the visitor's conversation, the
 * public handoff, and the listen-only socket's URL. Everything is addressed under the public key; the
 * visitor token is the only credential, sent in `X-Visitor-Token` or in the socket's `auth` frame.
 */
import { createParser } from 'eventsource-parser';

/** A knowledge-base passage an answer used (API.md "Chat": `citations`). */
export interface Citation {
  document_id: string;
  chunk_id: string;
  title: string;
  snippet: string;
  score: number;
}

/** A tool run of a stored message (API.md "Conversations and handoff": `tool_runs`). */
export interface ToolRun {
  id: string;
  name: string;
  is_error: boolean;
}

/** A stored message, as the public messages twin returns it. */
export interface StoredMessage {
  id: string;
  conversation_id: string;
  turn_id: string | null;
  role: 'visitor' | 'agent' | 'operator';
  content: string;
  citations?: Citation[];
  tool_runs?: ToolRun[];
  status?: string;
  finish_reason?: string | null;
  error?: { code: string; message: string } | null;
}

/** One stream event or socket frame (SPEC.md 6.1); fields by `type`. */
export interface StreamEvent {
  type: string;
  conversation_id?: string;
  turn_id?: string;
  visitor_token?: string;
  delta?: string;
  tool_call?: { id: string; name: string };
  tool_result?: { tool_call_id: string; name: string; is_error: boolean };
  citations?: Citation[];
  message_id?: string;
  finish_reason?: string;
  error?: { type: string; code: string; message: string };
  /** On socket frames: `operator` for an operator's push, any role on a stored message frame. */
  role?: 'visitor' | 'agent' | 'operator';
  /** On stored message frames (catch-up). */
  content?: string;
  retry_after?: number;
  /** On `status` frames: the conversation's status after a change (active, pending_handoff, handed_off, closed). */
  status?: string;
}

/** An API error (API.md "Errors") or a failed request: `status` 0 when the network failed. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** The public endpoints of one published agent at `base` (Parley's origin, `http://host:port`). */
export class PublicApi {
  private readonly root: string;

  constructor(readonly base: string, readonly publicKey: string) {
    this.root = `${base}/v1/public/agents/${encodeURIComponent(publicKey)}`;
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
    const res = await this.request(`${this.root}/chat`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ ...body, stream: true }), signal,
    });
    await readEventStream(res, onEvent);
  }

  /** Every message of the conversation after `after` (all when undefined), oldest first, page by page. */
  async messages(conversationId: string, visitorToken: string, after?: string): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let cursor = after;
    for (;;) {
      const q = new URLSearchParams({ limit: '100' });
      if (cursor !== undefined) q.set('after', cursor);
      const res = await this.request(`${this.root}/conversations/${encodeURIComponent(conversationId)}/messages?${q}`, {
        headers: { 'x-visitor-token': visitorToken },
      });
      const page = await res.json() as { data: StoredMessage[]; has_more: boolean };
      out.push(...page.data);
      if (!page.has_more || page.data.length === 0) return out;
      cursor = page.data[page.data.length - 1]!.id;
    }
  }

  /** POST .../handoff: the visitor asks for a person; the conversation's new status. */
  async handoff(conversationId: string, visitorToken: string): Promise<string> {
    const res = await this.request(`${this.root}/conversations/${encodeURIComponent(conversationId)}/handoff`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-visitor-token': visitorToken }, body: '{}',
    });
    return (await res.json() as { status: string }).status;
  }

  /** POST .../turns/{turn_id}/cancel: stops a running turn (its partial reply is stored). */
  async cancel(conversationId: string, turnId: string, visitorToken: string): Promise<void> {
    await this.request(`${this.root}/conversations/${encodeURIComponent(conversationId)}/turns/${encodeURIComponent(turnId)}/cancel`, {
      method: 'POST', headers: { 'x-visitor-token': visitorToken },
    });
  }

  /** The listen-only socket of a conversation (`ws:`/`wss:` of the base). */
  listenUrl(conversationId: string): string {
    return `${this.root.replace(/^http/, 'ws')}/conversations/${encodeURIComponent(conversationId)}/ws`;
  }

  private async request(url: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, credentials: 'omit', mode: 'cors' });
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
