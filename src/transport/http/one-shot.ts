import { AppError } from '../../errors/app-error.js';
import type { ErrorCode } from '../../errors/catalogue.js';
import { ERROR_CATALOGUE } from '../../errors/catalogue.js';
import type { TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { FinishReason, Citation, ToolRun, Usage } from '../../vocabulary/turn.js';

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

/**
 * Follows a turn's channel to its end and assembles the one-shot reply from the same events a stream
 * gets (tokens appended, `replace` assigned). Rejects with the turn's error as an AppError (e.g.
 * 502 model_unavailable, 504 model_timeout).
 */
export function collectReply(channel: TurnChannel): Promise<OneShotReply> {
  return new Promise((resolve, reject) => {
    const reply: OneShotReply = {
      conversation_id: channel.conversationId, message_id: '', content: '', citations: [], tool_runs: [],
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 }, finish_reason: 'stop',
    };
    const calls = new Map<string, ToolRun>();
    channel.subscribe({
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
          case 'usage': reply.usage = event.usage; break;
          case 'done': reply.finish_reason = event.finish_reason; resolve(reply); break;
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
  });
}
