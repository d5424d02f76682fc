import { AppError } from '../../errors/app-error.js';
import type { ErrorCode } from '../../errors/catalogue.js';
import { ERROR_CATALOGUE } from '../../errors/catalogue.js';
import type { TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { FinishReason, Citation, ToolRun, TurnTiming, Usage } from '../../vocabulary/turn.js';
import type { HttpResult } from './types.js';

/** The one-shot chat reply (API.md "Chat", stream=false). */
export interface OneShotReply {
  conversation_id: string;
  message_id: string;
  content: string;
  citations: Citation[];
  tool_runs: ToolRun[];
  usage: Usage;
  finish_reason: FinishReason;
  /** Public chat, a new conversation: the visitor token from its `conversation` event. */
  visitor_token?: string;
}

/** A one-shot reply and the turn's timing (from its `usage` event; null when it had none: a handoff). */
export interface CollectedReply {
  reply: OneShotReply;
  timing: TurnTiming | null;
}

/**
 * The `Server-Timing` header value of a turn's timing (W3C Server Timing: `name;dur=<ms>`, comma-separated),
 * one metric per step that happened, named as the timing fields without `_ms`: `queued`, `setup`,
 * `upstream_first_byte`, `first_token`, `total`. Each `dur` is ms from the request's arrival.
 */
export function serverTiming(timing: TurnTiming): string {
  const parts: string[] = [];
  const add = (name: string, ms: number | null) => { if (ms !== null) parts.push(`${name};dur=${ms}`); };
  add('queued', timing.queued_ms);
  add('setup', timing.setup_ms);
  add('upstream_first_byte', timing.upstream_first_byte_ms);
  add('first_token', timing.first_token_ms);
  add('total', timing.total_ms);
  return parts.join(', ');
}

/** A 200 JSON result of `body`, with `Server-Timing` when the turn has a timing (API.md "Chat", Timing). */
export function oneShotResult(body: unknown, timing: TurnTiming | null): HttpResult {
  return timing === null
    ? { kind: 'json', status: 200, body }
    : { kind: 'json', status: 200, body, headers: { 'Server-Timing': serverTiming(timing) } };
}

/**
 * Follows a turn's channel to its end as the turn's own client (the request whose message started it:
 * TurnChannel.subscribeOrigin, every event whatever the replay retention) and assembles the one-shot reply
 * from the same events a stream gets (tokens appended, `replace` assigned), with the timing of its `usage`
 * event. Rejects with the turn's error as an AppError (e.g. 502 model_unavailable, 504 model_timeout), or
 * `internal_error` when the channel no longer has its events (its own client already subscribed once).
 */
export function collectReply(channel: TurnChannel): Promise<CollectedReply> {
  return new Promise((resolve, reject) => {
    let timing: TurnTiming | null = null;
    const reply: OneShotReply = {
      conversation_id: channel.conversationId, message_id: '', content: '', citations: [], tool_runs: [],
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 }, finish_reason: 'stop',
    };
    const calls = new Map<string, ToolRun>();
    const unsubscribe = channel.subscribeOrigin({
      onEvent(_seq, event) {
        switch (event.type) {
          case 'token': reply.content += event.delta; break;
          case 'replace': reply.content = event.delta; break;
          case 'tool_call': {
            const run: ToolRun = { id: event.tool_call.id, name: event.tool_call.name, arguments: event.tool_call.arguments, output: null, is_error: false };
            calls.set(run.id, run);
            reply.tool_runs.push(run);
            break;
          }
          case 'tool_result': {
            const run = calls.get(event.tool_result.tool_call_id);
            if (run) { run.output = event.tool_result.output; run.is_error = event.tool_result.is_error; }
            break;
          }
          case 'citations': reply.citations = event.citations; break;
          case 'conversation': if (event.visitor_token !== undefined) reply.visitor_token = event.visitor_token; break;
          case 'message': reply.message_id = event.message_id; break;
          case 'usage': reply.usage = event.usage; timing = event.timing; break;
          case 'done': reply.finish_reason = event.finish_reason; resolve({ reply, timing }); break;
          case 'error': {
            const code = (event.error.code in ERROR_CATALOGUE ? event.error.code : 'internal_error') as ErrorCode;
            reject(new AppError(code, event.error.message));
            break;
          }
          default: break;
        }
      },
      onEnd() {},
    });
    if (unsubscribe === undefined) reject(new AppError('internal_error', 'The events of this turn are no longer kept; fetch the messages of the conversation.'));
  });
}
