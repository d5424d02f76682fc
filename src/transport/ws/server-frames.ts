/**
 * Server frames as JSON text (API.md "WebSockets"; shapes in frames.ts). Stream events come from the
 * turn channel already serialized once; a socket only appends `conversation_id`. What many sockets of
 * one conversation receive alike (a turn's events, an operator's message) is built once and shared.
 */
import { toAppError } from '../../errors/app-error.js';
import type { LiveEvent } from '../../runtime/live/live-hub.js';
import type { TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { MessageRecord } from '../../store/records.js';
import type { StreamEvent } from '../../vocabulary/stream-event.js';

/** `{"type":"pong"}`. */
export const PONG = '{"type":"pong"}';

/** `,"conversation_id":"<id>"}`: what turns an event's JSON object into its frame (ids need no escaping, but are escaped anyway). */
function suffixOf(conversationId: string): string {
  return `,"conversation_id":${JSON.stringify(conversationId)}}`;
}

/**
 * The frames of a turn's events: the event's JSON (serialized once by the channel) with `conversation_id`
 * added (the `conversation` event has it already: its JSON is the frame). The last frame built per
 * channel is remembered, so every socket following the turn live shares one string per event; a replay
 * builds its own.
 */
export class ChannelFrames {
  private readonly last = new WeakMap<TurnChannel, { seq: number; frame: string; suffix: string }>();

  frame(channel: TurnChannel, seq: number, event: StreamEvent, json: string): string {
    if (event.type === 'conversation') return json;
    let memo = this.last.get(channel);
    if (memo !== undefined && memo.seq === seq) return memo.frame;
    const suffix = memo?.suffix ?? suffixOf(channel.conversationId);
    const frame = json.slice(0, -1) + suffix;
    if (memo === undefined) this.last.set(channel, (memo = { seq, frame, suffix }));
    else if (seq > memo.seq) { memo.seq = seq; memo.frame = frame; }
    return frame;
  }
}

const operatorPushes = new WeakMap<MessageRecord, readonly string[]>();

/**
 * An operator's message as pushed to the visitor (API.md "WebSockets"): `token` with the whole text,
 * `message`, `done` / `stop`, each with `role: operator` and `conversation_id`. Built once per message.
 */
export function operatorPushFrames(m: MessageRecord): readonly string[] {
  let frames = operatorPushes.get(m);
  if (frames === undefined) {
    const c = JSON.stringify(m.conversation_id);
    frames = [
      `{"type":"token","delta":${JSON.stringify(m.content)},"role":"operator","conversation_id":${c}}`,
      `{"type":"message","message_id":${JSON.stringify(m.id)},"role":"operator","conversation_id":${c}}`,
      `{"type":"done","finish_reason":"stop","role":"operator","conversation_id":${c}}`,
    ];
    operatorPushes.set(m, frames);
  }
  return frames;
}

/** A stored message with `role` and `content` (catch-up, operator views). */
export function storedMessageFrame(m: MessageRecord): string {
  return JSON.stringify({
    type: 'message', conversation_id: m.conversation_id, message_id: m.id, role: m.role, content: m.content,
    turn_id: m.turn_id, created_at: m.created_at,
  });
}

/** `{"type":"error","error":{type,code,message},...}` for any thrown value (`retry_after` from a 429's Retry-After). */
export function errorFrame(err: unknown, conversationId?: string): string {
  const e = toAppError(err);
  const retry = e.headers?.['Retry-After'];
  return JSON.stringify({
    type: 'error', error: { type: e.type, code: e.code, message: e.message },
    ...(conversationId === undefined ? {} : { conversation_id: conversationId }),
    ...(retry === undefined ? {} : { retry_after: Number(retry) }),
  });
}

/** `{"type":"status","conversation_id","status"}` on an operator's view. */
export function statusFrame(conversationId: string, status: string): string {
  return JSON.stringify({ type: 'status', conversation_id: conversationId, status });
}

/** The inbox frame of a live event (undefined for what the inbox does not show: forwarded-message streams). */
export function inboxFrame(e: LiveEvent): string | undefined {
  switch (e.type) {
    case 'conversation.created':
      return JSON.stringify({ type: e.type, conversation_id: e.conversationId, agent_id: e.agentId });
    case 'conversation.status':
      return JSON.stringify({ type: e.type, conversation_id: e.conversationId, status: e.status });
    case 'message.created':
      return JSON.stringify({
        type: e.type, conversation_id: e.conversationId, message_id: e.message.id, role: e.message.role, content: e.message.content,
        turn_id: e.message.turn_id, created_at: e.message.created_at,
      });
    case 'turn.started':
      return e.forwarded ? undefined : JSON.stringify({ type: e.type, conversation_id: e.conversationId, turn_id: e.channel.turnId });
    case 'turn.ended':
      return JSON.stringify({ type: e.type, conversation_id: e.conversationId, turn_id: e.turnId, finish_reason: e.finishReason, error_code: e.errorCode });
  }
}
