/**
 * A Parley turn in OpenAI's chat completions shapes (API.md "OpenAI-compatible",
 * docs/openai-compatible.md): the `chat.completion` of a one-shot reply and the `chat.completion.chunk`
 * stream of a streamed one, each with a `parley` object beside the standard fields.
 */
import { TOKEN_JSON_PREFIX } from '../../../runtime/turn/turn-channel.js';
import type { StreamEvent } from '../../../vocabulary/stream-event.js';
import type { Citation, FinishReason, ToolRun, TurnTiming, Usage } from '../../../vocabulary/turn.js';
import type { SseFramer } from '../../sse/sse-writer.js';
import type { OneShotReply } from '../one-shot.js';

/** A finish reason OpenAI clients know (the OpenAI API reference, chat completion object). */
export type OpenAIFinishReason = 'stop' | 'length' | 'content_filter';

/**
 * Parley's finish reason as OpenAI's: `stop`, `length` and `content_filter` are the same; `handoff` (a
 * person takes over) and `cancelled` (the turn was stopped) end the agent's reply without a fault, which
 * OpenAI clients read as `stop`. The `parley.finish_reason` beside it keeps Parley's own.
 */
export function openAIFinishReason(reason: FinishReason): OpenAIFinishReason {
  return reason === 'length' || reason === 'content_filter' ? reason : 'stop';
}

/** OpenAI's usage object (`prompt_tokens`, `completion_tokens`, `total_tokens`) of a turn's usage. */
export function openAIUsage(u: Usage): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  return { prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens, total_tokens: u.total_tokens };
}

/** What every completion of one turn says about itself. */
export interface CompletionIdentity {
  /** `chatcmpl-<turn_id>`. */
  id: string;
  /** Unix seconds. */
  created: number;
  /** The agent id. */
  model: string;
}

/** The `id` of the completion of turn `turnId`. */
export function completionId(turnId: string): string {
  return `chatcmpl-${turnId}`;
}

/** The `chat.completion` object of a one-shot reply, with its turn's timing. */
export function chatCompletion(who: CompletionIdentity, reply: OneShotReply, timing: TurnTiming | null) {
  return {
    id: who.id, object: 'chat.completion' as const, created: who.created, model: who.model,
    choices: [{
      index: 0, message: { role: 'assistant' as const, content: reply.content, refusal: null }, logprobs: null,
      finish_reason: openAIFinishReason(reply.finish_reason),
    }],
    usage: openAIUsage(reply.usage),
    parley: {
      conversation_id: reply.conversation_id, message_id: reply.message_id, citations: reply.citations, tool_runs: reply.tool_runs,
      finish_reason: reply.finish_reason, timing,
    },
  };
}

/** The end of the SSE frame of a token chunk. */
const TOKEN_TAIL = '},"finish_reason":null}]}\n\n';
const DONE = 'data: [DONE]\n\n';

/**
 * Frames one turn's events as OpenAI `chat.completion.chunk` SSE events (an SseFramer):
 * - `conversation`: the first chunk, `delta: {role: "assistant"}`, with `parley.conversation_id`;
 * - `token`: `delta: {content}`: the prefix is built once per stream and the content is the token
 *   event's own JSON string (TurnChannel encodes it once for every subscriber), so a token costs about
 *   what Parley's own event frame costs;
 * - `tool_call`, `tool_result`, `citations`, `replace`, `message`, `usage`: nothing on the wire; kept for
 *   the last chunk (tools run on the server: sending them as `tool_calls` would make a client run them);
 * - `done`: a chunk with an empty delta, the finish reason and the whole `parley` object; then, with
 *   `stream_options.include_usage`, a chunk with no choices and `usage`; then `data: [DONE]`;
 * - `error`: `data: {"error":{type, code, message}}` (what OpenAI's SDK raises as an APIError), no `[DONE]`.
 */
export class ChatCompletionChunks implements SseFramer {
  private readonly head: string;
  private readonly tokenHead: string;
  private citations: Citation[] = [];
  private readonly toolRuns: ToolRun[] = [];
  private replace: string | undefined;
  private messageId: string | undefined;
  private usage: Usage | undefined;
  private timing: TurnTiming | null = null;

  constructor(who: CompletionIdentity, private readonly conversationId: string, private readonly includeUsage: boolean) {
    this.head = `data: {"id":${JSON.stringify(who.id)},"object":"chat.completion.chunk","created":${who.created},"model":${JSON.stringify(who.model)},"choices":`;
    this.tokenHead = `${this.head}[{"index":0,"delta":{"content":`;
  }

  frame(_seq: number, event: StreamEvent, json: string): string {
    switch (event.type) {
      case 'token': return this.tokenHead + json.slice(TOKEN_JSON_PREFIX.length, -1) + TOKEN_TAIL;
      case 'conversation':
        return `${this.head}[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}],"parley":${JSON.stringify({ conversation_id: this.conversationId })}}\n\n`;
      case 'tool_call':
        this.toolRuns.push({ id: event.tool_call.id, name: event.tool_call.name, arguments: event.tool_call.arguments, output: null, is_error: false });
        return '';
      case 'tool_result': {
        const run = this.toolRuns.find((r) => r.id === event.tool_result.tool_call_id);
        if (run !== undefined) { run.output = event.tool_result.output; run.is_error = event.tool_result.is_error; }
        return '';
      }
      case 'citations': this.citations = event.citations; return '';
      case 'replace': this.replace = event.delta; return '';
      case 'message': this.messageId = event.message_id; return '';
      case 'usage': this.usage = event.usage; this.timing = event.timing; return '';
      case 'done': return this.last(event.finish_reason);
      case 'error': return `data: ${JSON.stringify({ error: { type: event.error.type, code: event.error.code, message: event.error.message } })}\n\n`;
    }
  }

  /** The chunk with the finish reason and the `parley` object, the usage chunk when asked for, `[DONE]`. */
  private last(reason: FinishReason): string {
    const parley = {
      conversation_id: this.conversationId, message_id: this.messageId, citations: this.citations, tool_runs: this.toolRuns,
      // `replace` stays out of the JSON unless the safety check fired (JSON.stringify drops undefined).
      finish_reason: reason, timing: this.timing, replace: this.replace,
    };
    let out = `${this.head}[{"index":0,"delta":{},"finish_reason":${JSON.stringify(openAIFinishReason(reason))}}],"parley":${JSON.stringify(parley)}}\n\n`;
    if (this.includeUsage) {
      const usage = this.usage ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
      out += `${this.head}[],"usage":${JSON.stringify(openAIUsage(usage))}}\n\n`;
    }
    return out + DONE;
  }
}
