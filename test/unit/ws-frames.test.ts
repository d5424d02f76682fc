/**
 * The WebSocket frame schemas (API.md "WebSockets") on concrete frames: what each client frame accepts
 * and refuses at its bounds, the error message a refused frame gets, and the server frames that tests
 * and clients check received frames against.
 */
import { describe, expect, it } from 'vitest';
import {
  ChatClientFrame, ErrorFrame, InboxFrame, ListenClientFrame, MAX_FRAME_BYTES, OperatorClientFrame, OperatorPushFrame,
  PongFrame, StatusFrame, StoredMessageFrame, StreamFrame, parseFrame,
} from '../../src/transport/ws/frames.js';

const CONV = 'conv_01JD5R2A0Z0000H4J6K8M0N2PQ';
const TURN = 'turn_01JD5R2A1B0000K8M3N5P7Q9RS';
const MSG = 'msg_01JD5R2A1B0000K8M3N5P7Q9RS';

const chat = (frame: unknown) => parseFrame(ChatClientFrame, JSON.stringify(frame));
const listen = (frame: unknown) => parseFrame(ListenClientFrame, JSON.stringify(frame));
const operator = (frame: unknown) => parseFrame(OperatorClientFrame, JSON.stringify(frame));

describe('client frames', () => {
  it('caps frames at 64 KiB', () => {
    expect(MAX_FRAME_BYTES).toBe(65_536);
  });

  it('parseFrame: text that is not JSON is invalid_json with a fixed message', () => {
    expect(parseFrame(ChatClientFrame, '{"type":')).toEqual({ ok: false, code: 'invalid_json', message: 'A frame must be one JSON object.' });
  });

  it('parseFrame: a refused frame names the field and the problem', () => {
    const r = chat({ type: 'message', message: '' });
    expect(r.ok).toBe(false);
    expect(r).toMatchObject({ code: 'validation_failed' });
    expect((r as { message: string }).message).toMatch(/^Invalid frame: message: /);
  });

  it('parseFrame: our own id rules give their own words, after the field', () => {
    expect(chat({ type: 'cancel', turn_id: 'x' })).toEqual({ ok: false, code: 'validation_failed', message: 'Invalid frame: turn_id: must be a turn_ id' });
    expect(chat({ type: 'message', message: 'h', conversation_id: 'x' })).toEqual({ ok: false, code: 'validation_failed', message: 'Invalid frame: conversation_id: must be a conv_ id' });
    expect(listen({ type: 'auth', visitor_token: 'vt', after_message_id: 'x' })).toEqual({ ok: false, code: 'validation_failed', message: 'Invalid frame: after_message_id: must be a msg_ id' });
  });

  it('parseFrame: a problem with the whole frame has no field path', () => {
    const r = chat([1]);
    expect(r).toMatchObject({ ok: false, code: 'validation_failed' });
    expect((r as { message: string }).message).toMatch(/^Invalid frame: [A-Z]/);
    expect((r as { message: string }).message).not.toContain('not a known frame');
  });

  it('parseFrame: a frame of no known type says so without a field path', () => {
    const r = chat({ type: 'shout' });
    expect(r).toMatchObject({ ok: false, code: 'validation_failed' });
    expect((r as { message: string }).message).toMatch(/^Invalid frame: (type: )?/);
    expect((r as { message: string }).message).not.toMatch(/^Invalid frame: $/);
  });

  it('message: 1 to 32,000 characters, an optional conv_ id and visitor token, nothing else', () => {
    expect(chat({ type: 'message', message: 'h' })).toEqual({ ok: true, frame: { type: 'message', message: 'h' } });
    expect(chat({ type: 'message', message: 'x'.repeat(32_000) }).ok).toBe(true);
    expect(chat({ type: 'message', message: 'x'.repeat(32_001) }).ok).toBe(false);
    expect(chat({ type: 'message', message: '' }).ok).toBe(false);
    expect(chat({ type: 'message', message: 'h', conversation_id: CONV, visitor_token: 'vt_abc', metadata: { a: '1' } }).ok).toBe(true);
    // metadata follows Stripe's rules (src/vocabulary/metadata.ts): string values only.
    expect(chat({ type: 'message', message: 'h', metadata: { a: 1 } })).toEqual({ ok: false, code: 'validation_failed', message: 'Invalid frame: metadata.a: values must be strings' });
    expect(chat({ type: 'message', message: 'h', stream: true }).ok).toBe(false);
  });

  it.each([
    ['a conv_ id with 64 characters', `conv_${'a'.repeat(64)}`, true],
    ['a conv_ id with 65 characters', `conv_${'a'.repeat(65)}`, false],
    ['a bare prefix', 'conv_', false],
    ['a prefix in the middle', `xconv_${'a'.repeat(10)}`, false],
    ['trailing punctuation', 'conv_abc!', false],
    ['a turn id', TURN, false],
  ])('conversation_id: %s', (_name, id, ok) => {
    expect(chat({ type: 'message', message: 'h', conversation_id: id }).ok).toBe(ok);
  });

  it('cancel takes an optional turn_ id only', () => {
    expect(chat({ type: 'cancel' })).toEqual({ ok: true, frame: { type: 'cancel' } });
    expect(chat({ type: 'cancel', turn_id: TURN }).ok).toBe(true);
    expect(chat({ type: 'cancel', turn_id: CONV }).ok).toBe(false);
    expect(chat({ type: 'cancel', turn_id: `${TURN}!` }).ok).toBe(false);
    expect(chat({ type: 'cancel', turn_id: `x${TURN}` }).ok).toBe(false);
    expect(chat({ type: 'cancel', turn_id: 'turn_' }).ok).toBe(false);
    expect(chat({ type: 'cancel', now: true }).ok).toBe(false);
  });

  it('ping takes nothing else', () => {
    expect(chat({ type: 'ping' })).toEqual({ ok: true, frame: { type: 'ping' } });
    expect(chat({ type: 'ping', at: 1 }).ok).toBe(false);
  });

  it('resume needs a turn_ id and a whole after_seq >= 0', () => {
    expect(chat({ type: 'resume', turn_id: TURN, after_seq: 0 }).ok).toBe(true);
    expect(chat({ type: 'resume', turn_id: TURN, after_seq: 7, visitor_token: 'vt_x' }).ok).toBe(true);
    expect(chat({ type: 'resume', turn_id: TURN, after_seq: -1 }).ok).toBe(false);
    expect(chat({ type: 'resume', turn_id: TURN, after_seq: 1.5 }).ok).toBe(false);
    expect(chat({ type: 'resume', turn_id: TURN }).ok).toBe(false);
    expect(chat({ type: 'resume', after_seq: 1 }).ok).toBe(false);
  });

  it('the listen-only socket takes auth (visitor token, optional msg_ id) and ping, nothing else', () => {
    expect(listen({ type: 'auth', visitor_token: 'vt_x' })).toEqual({ ok: true, frame: { type: 'auth', visitor_token: 'vt_x' } });
    expect(listen({ type: 'auth', visitor_token: 'vt_x', after_message_id: MSG }).ok).toBe(true);
    expect(listen({ type: 'auth', visitor_token: 'vt_x', after_message_id: `x${MSG}` }).ok).toBe(false);
    expect(listen({ type: 'auth', visitor_token: 'vt_x', after_message_id: `${MSG}?` }).ok).toBe(false);
    expect(listen({ type: 'auth', visitor_token: 'vt_x', after_message_id: 'msg_' }).ok).toBe(false);
    expect(listen({ type: 'auth', visitor_token: '' }).ok).toBe(false);
    expect(listen({ type: 'auth', visitor_token: 'v'.repeat(201) }).ok).toBe(false);
    expect(listen({ type: 'ping' }).ok).toBe(true);
    expect(listen({ type: 'message', message: 'h' }).ok).toBe(false);
  });

  it('the operator socket takes message frames with 1 to 32,000 characters of content, and ping', () => {
    expect(operator({ type: 'message', content: 'On it.' })).toEqual({ ok: true, frame: { type: 'message', content: 'On it.' } });
    expect(operator({ type: 'message', content: 'x'.repeat(32_000) }).ok).toBe(true);
    expect(operator({ type: 'message', content: 'x'.repeat(32_001) }).ok).toBe(false);
    expect(operator({ type: 'message', content: '' }).ok).toBe(false);
    expect(operator({ type: 'message', message: 'hi' }).ok).toBe(false);
    expect(operator({ type: 'ping' }).ok).toBe(true);
    expect(operator({ type: 'cancel' }).ok).toBe(false);
  });
});

describe('server frames', () => {
  it('a stream frame is a stream event with conversation_id', () => {
    expect(StreamFrame.safeParse({ type: 'token', delta: 'Hi', conversation_id: CONV }).success).toBe(true);
    expect(StreamFrame.safeParse({ type: 'token', delta: 'Hi' }).success).toBe(false);
  });

  it('a stored message frame carries id, role, content, turn and time', () => {
    const frame = { type: 'message', conversation_id: CONV, message_id: MSG, role: 'operator', content: 'Hello', turn_id: null, created_at: '2026-11-23T20:00:00.000Z' };
    expect(StoredMessageFrame.safeParse(frame).success).toBe(true);
    expect(StoredMessageFrame.safeParse({ ...frame, type: 'token' }).success).toBe(false);
    expect(StoredMessageFrame.safeParse({ ...frame, role: 'robot' }).success).toBe(false);
  });

  it('an operator push is token, message and done, each marked role operator', () => {
    const ok = [
      { type: 'token', delta: 'Hello', role: 'operator', conversation_id: CONV },
      { type: 'message', message_id: MSG, role: 'operator', conversation_id: CONV },
      { type: 'done', finish_reason: 'stop', role: 'operator', conversation_id: CONV },
    ];
    for (const f of ok) expect(OperatorPushFrame.safeParse(f).success, JSON.stringify(f)).toBe(true);
    for (const f of ok) expect(OperatorPushFrame.safeParse({ ...f, role: 'agent' }).success, JSON.stringify(f)).toBe(false);
    expect(OperatorPushFrame.safeParse({ type: 'done', finish_reason: 'length', role: 'operator', conversation_id: CONV }).success).toBe(false);
    expect(OperatorPushFrame.safeParse({ type: 'token', delta: 'x', role: 'operator' }).success).toBe(false);
    expect(OperatorPushFrame.safeParse({ type: 'citations', role: 'operator', conversation_id: CONV }).success).toBe(false);
  });

  it('pong, status and error frames', () => {
    expect(PongFrame.safeParse({ type: 'pong' }).success).toBe(true);
    expect(PongFrame.safeParse({ type: 'ping' }).success).toBe(false);
    expect(StatusFrame.safeParse({ type: 'status', conversation_id: CONV, status: 'handed_off' }).success).toBe(true);
    expect(StatusFrame.safeParse({ type: 'status', conversation_id: CONV, status: 'busy' }).success).toBe(false);
    expect(StatusFrame.safeParse({ type: 'state', conversation_id: CONV, status: 'active' }).success).toBe(false);
    const error = { type: 'error', error: { type: 'rate_limit_error', code: 'rate_limited', message: 'Slow down.' }, retry_after: 3 };
    expect(ErrorFrame.safeParse(error).success).toBe(true);
    expect(ErrorFrame.safeParse({ ...error, type: 'err' }).success).toBe(false);
    expect(ErrorFrame.safeParse({ ...error, retry_after: 1.5 }).success).toBe(false);
  });

  it('inbox frames: the five kinds, each with conversation_id', () => {
    const ok = [
      { type: 'conversation.created', conversation_id: CONV, agent_id: 'agt_1' },
      { type: 'conversation.status', conversation_id: CONV, status: 'pending_handoff' },
      { type: 'message.created', conversation_id: CONV, message_id: MSG, role: 'visitor', content: 'Hi', turn_id: TURN, created_at: '2026-11-23T20:00:00.000Z' },
      { type: 'turn.started', conversation_id: CONV, turn_id: TURN },
      { type: 'turn.ended', conversation_id: CONV, turn_id: TURN, finish_reason: 'stop', error_code: null },
    ];
    for (const f of ok) {
      expect(InboxFrame.safeParse(f).success, JSON.stringify(f)).toBe(true);
      const { conversation_id: _c, ...without } = f;
      expect(InboxFrame.safeParse(without).success, `${f.type} without conversation_id`).toBe(false);
    }
    expect(InboxFrame.safeParse({ type: 'turn.paused', conversation_id: CONV, turn_id: TURN }).success).toBe(false);
  });
});
