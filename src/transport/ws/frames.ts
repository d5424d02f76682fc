/**
 * WebSocket frames (API.md "WebSockets"): JSON text frames, validated with zod at the edge. The client
 * frame schemas refuse unknown fields (API.md "Conventions"); the server frame schemas document what the
 * server sends (docs/websockets.md) and let tests check every frame they receive.
 */
import { z } from 'zod';
import { MessageRoleSchema } from '../../vocabulary/message.js';
import { MetadataSchema } from '../../vocabulary/metadata.js';
import { ConversationStatusSchema } from '../../vocabulary/conversation.js';
import { StreamEventSchema } from '../../vocabulary/stream-event.js';
import { TurnErrorSchema } from '../../vocabulary/turn.js';

/** Largest frame a client may send, bytes (64 KiB); a larger one closes the socket with 1009 (RFC 6455 section 7.4.1). */
export const MAX_FRAME_BYTES = 64 * 1024;

const convId = z.string().regex(/^conv_[0-9A-Za-z]{1,64}$/, 'must be a conv_ id');
const turnId = z.string().regex(/^turn_[0-9A-Za-z]{1,64}$/, 'must be a turn_ id');
const visitorToken = z.string().min(1).max(200);

/** `{"type":"message","message","conversation_id"?,"visitor_token"?,"metadata"?}`: a chat message (the chat request body, less `stream`). */
export const MessageFrame = z.object({
  type: z.literal('message'),
  message: z.string().min(1).max(32_000),
  conversation_id: convId.optional(),
  visitor_token: visitorToken.optional(),
  metadata: MetadataSchema.optional(),
}).strict();

/** `{"type":"cancel","turn_id"?}`: stop the socket's current turn (or the named one): `done` / `cancelled`. */
export const CancelFrame = z.object({ type: z.literal('cancel'), turn_id: turnId.optional() }).strict();

/** `{"type":"ping"}`: answered with `{"type":"pong"}`. */
export const PingFrame = z.object({ type: z.literal('ping') }).strict();

/**
 * `{"type":"resume","turn_id","after_seq","visitor_token"?}`: replay that turn's events after `after_seq`
 * (the `conversation` event is 1), then follow it live; the socket twin of `Last-Event-ID`.
 */
export const ResumeFrame = z.object({
  type: z.literal('resume'),
  turn_id: turnId,
  after_seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  visitor_token: visitorToken.optional(),
}).strict();

/** Frames of the chat sockets (`/v1/agents/{agent_id}/chat/ws`, `/v1/public/agents/{public_key}/ws`). */
export const ChatClientFrame = z.discriminatedUnion('type', [MessageFrame, CancelFrame, PingFrame, ResumeFrame]);
export type ChatClientFrame = z.infer<typeof ChatClientFrame>;

/** The first frame of the listen-only socket: `{"type":"auth","visitor_token","after_message_id"?}`, within 5 s. */
export const AuthFrame = z.object({
  type: z.literal('auth'),
  visitor_token: visitorToken,
  after_message_id: z.string().regex(/^msg_[0-9A-Za-z]{1,64}$/, 'must be a msg_ id').optional(),
}).strict();
export const ListenClientFrame = z.discriminatedUnion('type', [AuthFrame, PingFrame]);
export type ListenClientFrame = z.infer<typeof ListenClientFrame>;

/** An operator's message on the conversation socket: `{"type":"message","content"}` (as `POST .../messages`). */
export const OperatorMessageFrame = z.object({ type: z.literal('message'), content: z.string().min(1).max(32_000) }).strict();
export const OperatorClientFrame = z.discriminatedUnion('type', [OperatorMessageFrame, PingFrame]);
export type OperatorClientFrame = z.infer<typeof OperatorClientFrame>;

/** The inbox takes only pings. */
export const InboxClientFrame = PingFrame;

// Server frames.

const withConversation = { conversation_id: z.string() };

/** A stream event of a turn (API.md "Chat") with `conversation_id` added. */
export const StreamFrame = z.intersection(StreamEventSchema, z.object(withConversation)).meta({ id: 'StreamFrame' });

/** A stored message, in a catch-up or on an operator's view: `role` and `content` with the message id. */
export const StoredMessageFrame = z.object({
  type: z.literal('message'), ...withConversation, message_id: z.string(), role: MessageRoleSchema, content: z.string(),
  turn_id: z.string().nullable(), created_at: z.string(),
}).strict();

/** An operator's message pushed to the visitor: `token` (the whole text), `message`, `done`, each with `role: operator`. */
export const OperatorPushFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('token'), delta: z.string(), role: z.literal('operator'), ...withConversation }).strict(),
  z.object({ type: z.literal('message'), message_id: z.string(), role: z.literal('operator'), ...withConversation }).strict(),
  z.object({ type: z.literal('done'), finish_reason: z.literal('stop'), role: z.literal('operator'), ...withConversation }).strict(),
]);

/** `{"type":"pong"}`. */
export const PongFrame = z.object({ type: z.literal('pong') }).strict();

/** A refused frame or a failed request on a socket: the error object of API.md "Errors" (`retry_after` seconds on `rate_limited`). */
export const ErrorFrame = z.object({
  type: z.literal('error'), error: TurnErrorSchema, conversation_id: z.string().optional(), retry_after: z.number().int().optional(),
}).strict();

/** A status change on an operator's conversation view. */
export const StatusFrame = z.object({ type: z.literal('status'), ...withConversation, status: ConversationStatusSchema }).strict();

/** The inbox frames: every conversation event of the organization. */
export const InboxFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('conversation.created'), ...withConversation, agent_id: z.string() }).strict(),
  z.object({ type: z.literal('conversation.status'), ...withConversation, status: ConversationStatusSchema }).strict(),
  z.object({
    type: z.literal('message.created'), ...withConversation, message_id: z.string(), role: MessageRoleSchema, content: z.string(),
    turn_id: z.string().nullable(), created_at: z.string(),
  }).strict(),
  z.object({ type: z.literal('turn.started'), ...withConversation, turn_id: z.string() }).strict(),
  z.object({
    type: z.literal('turn.ended'), ...withConversation, turn_id: z.string(), finish_reason: z.string().nullable(), error_code: z.string().nullable(),
  }).strict(),
]);

/** The text of a client frame parsed as JSON and checked with `schema`: the frame, or the problem as an `error` frame body. */
export function parseFrame<T>(schema: z.ZodType<T>, text: string): { ok: true; frame: T } | { ok: false; code: 'invalid_json' | 'validation_failed'; message: string } {
  let value: unknown;
  try { value = JSON.parse(text); } catch {
    return { ok: false, code: 'invalid_json', message: 'A frame must be one JSON object.' };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first && first.path.length > 0 ? `${first.path.map((k) => String(k).slice(0, 64)).join('.')}: ` : '';
    // A record key that breaks its rule (metadata): the key's own message, which zod nests.
    const message = first?.code === 'invalid_key' ? first.issues[0]?.message ?? first.message : first?.message;
    return { ok: false, code: 'validation_failed', message: `Invalid frame: ${where}${message ?? 'not a known frame'}` };
  }
  return { ok: true, frame: parsed.data };
}
