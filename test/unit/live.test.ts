/**
 * The live-channel building blocks without sockets: the hub (pub/sub and revocation), the frame builders,
 * the per-socket turn follower, the listen-only socket's catch-up/live join (nothing lost or doubled),
 * the CORS and Origin rules, and frame parsing.
 */
import { describe, expect, it } from 'vitest';
import { LiveHub, type LiveEvent } from '../../src/runtime/live/live-hub.js';
import { originAllowed } from '../../src/runtime/services/public.js';
import { TurnChannel } from '../../src/runtime/turn/turn-channel.js';
import type { MessageRecord } from '../../src/store/records.js';
import { corsHeaders, preflightHeaders } from '../../src/transport/http/cors.js';
import { ChatClientFrame, ListenClientFrame, parseFrame } from '../../src/transport/ws/frames.js';
import { ChannelFrames, errorFrame, inboxFrame, operatorPushFrames } from '../../src/transport/ws/server-frames.js';
import { ListenSession, type SocketServices } from '../../src/transport/ws/sessions.js';
import type { SocketPort } from '../../src/transport/ws/socket.js';
import { TurnFollower } from '../../src/transport/ws/turn-follower.js';
import { AppError } from '../../src/errors/app-error.js';

const channel = (turnId: string, conversationId = 'conv_1') => new TurnChannel(turnId, conversationId, 'org_1', { maxChars: 1_000_000 });

function message(id: string, role: MessageRecord['role'], content: string, turnId: string | null = null): MessageRecord {
  return {
    id, conversation_id: 'conv_1', org_id: 'org_1', turn_id: turnId, role, content, citations: [], tool_runs: [], usage: null,
    status: 'completed', finish_reason: null, error: null, timing: null, created_at: '2025-01-01T00:00:00.000Z',
  };
}

describe('LiveHub', () => {
  it('delivers by conversation and by organization, in publish order, until unsubscribed', () => {
    const hub = new LiveHub();
    const byConv: string[] = [];
    const byOrg: string[] = [];
    const offConv = hub.subscribeConversation('conv_1', { deliver: (e) => byConv.push(e.type) });
    const offOrg = hub.subscribeOrg('org_1', { deliver: (e) => byOrg.push(e.type) });
    hub.conversationCreated('org_1', 'conv_1', 'agt_1');
    hub.messageCreated(message('msg_1', 'visitor', 'hi'));
    hub.turnStarted(channel('turn_1'), false);
    hub.statusChanged('org_1', 'conv_1', 'handed_off');
    hub.messageCreated({ ...message('msg_2', 'visitor', 'other'), conversation_id: 'conv_2' });
    expect(byConv).toEqual(['message.created', 'turn.started', 'conversation.status']);
    expect(byOrg).toEqual(['conversation.created', 'message.created', 'turn.started', 'conversation.status', 'message.created']);
    expect(hub.listeners('org_1', 'conv_1')).toBe(2);
    offConv();
    offConv();
    offOrg();
    expect(hub.listeners('org_1', 'conv_1')).toBe(0);
    hub.messageCreated(message('msg_3', 'visitor', 'nobody hears'));
    expect(byConv).toHaveLength(3);
  });

  it('turn.ended carries the finish reason or the error code of the terminal event', () => {
    const hub = new LiveHub();
    const got: LiveEvent[] = [];
    hub.subscribeOrg('org_1', { deliver: (e) => got.push(e) });
    const done = channel('turn_1');
    done.emit({ type: 'done', finish_reason: 'handoff' });
    hub.turnEnded(done);
    const failed = channel('turn_2');
    failed.emit({ type: 'error', error: { type: 'upstream_error', code: 'model_timeout', message: 'slow' } });
    hub.turnEnded(failed);
    expect(got).toEqual([
      { type: 'turn.ended', orgId: 'org_1', conversationId: 'conv_1', turnId: 'turn_1', finishReason: 'handoff', errorCode: null },
      { type: 'turn.ended', orgId: 'org_1', conversationId: 'conv_1', turnId: 'turn_2', finishReason: null, errorCode: 'model_timeout' },
    ]);
  });

  it('drops a subscriber that throws; the others still get the event', () => {
    const hub = new LiveHub();
    const got: string[] = [];
    hub.subscribeConversation('conv_1', { deliver: () => { throw new Error('broken socket'); } });
    hub.subscribeConversation('conv_1', { deliver: (e) => got.push(e.type) });
    hub.messageCreated(message('msg_1', 'operator', 'a'));
    hub.messageCreated(message('msg_2', 'operator', 'b'));
    expect(got).toEqual(['message.created', 'message.created']);
    expect(hub.listeners('org_1', 'conv_1')).toBe(1);
  });

  it('accessChanged tells every watcher of a key, each time, until it stops watching; a throwing one does not stop the others', () => {
    const hub = new LiveHub();
    const told: string[] = [];
    hub.watchAccess('session:rtf_1', (c) => told.push(`a:${c.kind}`));
    const off = hub.watchAccess('session:rtf_1', () => told.push('b'));
    hub.watchAccess('session:rtf_1', () => { throw new Error('already gone'); });
    hub.watchAccess('public:pk_1', () => told.push('c'));
    off();
    off();
    expect(hub.watching('session:rtf_1')).toBe(2);
    expect(hub.accessChanged('session:rtf_1', { kind: 'ended', reason: 'session_ended' })).toBe(2);
    expect(hub.accessChanged('member:org_1:usr_1', { kind: 'role', role: null })).toBe(0);
    expect(hub.accessChanged('session:rtf_1', { kind: 'role', role: 'admin' })).toBe(2);
    expect(told).toEqual(['a:ended', 'a:role']);
    expect(hub.watching('public:pk_1')).toBe(1);
  });
});

describe('server frames', () => {
  it('a turn event becomes its JSON with conversation_id; every socket following live shares the one string', () => {
    const frames = new ChannelFrames();
    const ch = channel('turn_1');
    const token = { type: 'token', delta: 'hi' } as const;
    const a = frames.frame(ch, 2, token, '{"type":"token","delta":"hi"}');
    const b = frames.frame(ch, 2, token, '{"type":"token","delta":"hi"}');
    expect(a).toBe('{"type":"token","delta":"hi","conversation_id":"conv_1"}');
    expect(b).toBe(a);
    // The conversation event names its conversation already: its JSON is the frame.
    const json = '{"type":"conversation","conversation_id":"conv_1","turn_id":"turn_1"}';
    expect(frames.frame(ch, 1, { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' }, json)).toBe(json);
  });

  it('an operator message pushes token (whole text), message, done with role operator, built once per message', () => {
    const m = message('msg_9', 'operator', 'Hello "there"');
    const frames = operatorPushFrames(m);
    expect(frames.map((f) => JSON.parse(f) as unknown)).toEqual([
      { type: 'token', delta: 'Hello "there"', role: 'operator', conversation_id: 'conv_1' },
      { type: 'message', message_id: 'msg_9', role: 'operator', conversation_id: 'conv_1' },
      { type: 'done', finish_reason: 'stop', role: 'operator', conversation_id: 'conv_1' },
    ]);
    expect(operatorPushFrames(m)).toBe(frames);
  });

  it('an error frame carries the API error object and retry_after of a 429', () => {
    expect(JSON.parse(errorFrame(new AppError('rate_limited', 'slow down', { headers: { 'Retry-After': '7' } }), 'conv_1'))).toEqual({
      type: 'error', error: { type: 'rate_limit_error', code: 'rate_limited', message: 'slow down' }, conversation_id: 'conv_1', retry_after: 7,
    });
    expect(JSON.parse(errorFrame(new Error('secret detail')))).toEqual({ type: 'error', error: { type: 'api_error', code: 'internal_error', message: 'An internal error occurred.' } });
  });

  it('the inbox shows agent turns, not the streams of forwarded messages', () => {
    expect(inboxFrame({ type: 'turn.started', orgId: 'org_1', conversationId: 'conv_1', channel: channel('turn_1'), forwarded: false }))
      .toBe('{"type":"turn.started","conversation_id":"conv_1","turn_id":"turn_1"}');
    expect(inboxFrame({ type: 'turn.started', orgId: 'org_1', conversationId: 'conv_1', channel: channel('turn_2'), forwarded: true })).toBeUndefined();
  });
});

describe('TurnFollower', () => {
  it('writes the turns of one conversation one after the other, each contiguous, and a turn offered twice once', () => {
    const out: string[] = [];
    const follower = new TurnFollower((f) => out.push(JSON.parse(f).delta ?? JSON.parse(f).type), new ChannelFrames(), () => {});
    const t1 = channel('turn_1');
    const t2 = channel('turn_2');
    t1.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    t2.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_2' });
    follower.follow(t1);
    follower.follow(t2);
    follower.follow(t1);
    t1.emit({ type: 'token', delta: 'a' });
    t2.emit({ type: 'token', delta: 'x' });
    t1.emit({ type: 'done', finish_reason: 'stop' });
    t2.emit({ type: 'done', finish_reason: 'stop' });
    expect(out).toEqual(['conversation', 'a', 'done', 'conversation', 'x', 'done']);
    expect(follower.turns()).toEqual([]);
  });

  it('resumes after a sequence number, and reports a turn whose events are gone', () => {
    const out: string[] = [];
    const gone: string[] = [];
    const follower = new TurnFollower((f) => out.push(f), new ChannelFrames(), (ch) => gone.push(ch.turnId));
    const t = channel('turn_1');
    t.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    t.emit({ type: 'token', delta: 'a' });
    t.emit({ type: 'token', delta: 'b' });
    follower.follow(t, 2);
    expect(out).toEqual(['{"type":"token","delta":"b","conversation_id":"conv_1"}']);
    const dropped = channel('turn_2');
    dropped.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_2' });
    dropped.dropReplay();
    follower.follow(dropped, 0);
    t.emit({ type: 'done', finish_reason: 'stop' });
    expect(gone).toEqual(['turn_2']);
  });
});

describe('TurnFollower: the socket\'s own turns', () => {
  const ownChannel = (turnId: string) => new TurnChannel(turnId, 'conv_1', 'org_1', { maxChars: 1_000_000 }, undefined, true);

  it('an own turn queued behind another gets every event, though it ended and its replay was dropped while it waited', () => {
    const out: string[] = [];
    const gone: string[] = [];
    const follower = new TurnFollower((f) => out.push(JSON.parse(f).delta ?? JSON.parse(f).type), new ChannelFrames(), (ch) => gone.push(ch.turnId));
    const t1 = ownChannel('turn_1');
    const t2 = ownChannel('turn_2');
    t1.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    t2.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_2' });
    follower.follow(t1, 'origin');
    follower.follow(t2, 'origin');
    t2.emit({ type: 'token', delta: 'x' });
    t2.emit({ type: 'done', finish_reason: 'stop' });
    t2.dropReplay();
    t1.emit({ type: 'token', delta: 'a' });
    t1.emit({ type: 'done', finish_reason: 'stop' });
    expect(out).toEqual(['conversation', 'a', 'done', 'conversation', 'x', 'done']);
    expect(gone).toEqual([]);
  });

  it('closing the socket releases what its waiting own turns kept for it; an own turn offered after close is released', () => {
    const follower = new TurnFollower(() => {}, new ChannelFrames(), () => {});
    const t1 = ownChannel('turn_1');
    const t2 = ownChannel('turn_2');
    t1.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    t2.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_2' });
    t2.dropReplay();
    follower.follow(t1, 'origin');
    follower.follow(t2, 'origin');
    expect(t1.awaitsOrigin).toBe(false);
    expect(t2.awaitsOrigin).toBe(true);
    expect(t2.retainedChars).toBeGreaterThan(0);
    follower.close();
    expect(t2.awaitsOrigin).toBe(false);
    expect(t2.retainedChars).toBe(0);
    expect(t1.subscriberCount).toBe(0);
    const t3 = ownChannel('turn_3');
    follower.follow(t3, 'origin');
    expect(t3.awaitsOrigin).toBe(false);
  });
});

describe('listen-only join: nothing lost or doubled between catch-up and live', () => {
  it('skips what the catch-up showed, follows what it did not, and goes live', async () => {
    const hub = new LiveHub();
    const frames: unknown[] = [];
    const closes: number[] = [];
    const port: SocketPort = {
      send: (f) => frames.push(JSON.parse(f)), close: (code) => closes.push(code), closed: false, remoteAddress: '127.0.0.1',
    };
    const answered = channel('turn_1');
    answered.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' });
    answered.emit({ type: 'token', delta: 'old' });
    answered.emit({ type: 'done', finish_reason: 'stop' });
    const running = channel('turn_2');
    running.emit({ type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_2' });
    const inCatchUp = message('msg_3', 'operator', 'stored before the read');
    const services = {
      chat: { live: hub, localPendingTurns: () => [] },
      public: {
        limit: () => {},
        listenedConversation: async () => ({ agent: { org_id: 'org_1' }, conversation: { id: 'conv_1' } }),
      },
      conversations: {
        // Events published while the store is read: they are buffered, then sorted against the catch-up.
        messagesAfter: async () => {
          hub.messageCreated(inCatchUp);
          hub.turnStarted(answered, false);
          hub.turnStarted(running, false);
          return [message('msg_1', 'visitor', 'q1', 'turn_1'), message('msg_2', 'agent', 'old', 'turn_1'), inCatchUp];
        },
      },
      logger: undefined, frames: new ChannelFrames(), authTimeoutMs: 60_000,
    } as unknown as SocketServices;
    const session = new ListenSession(services, 'pk_1', 'conv_1');
    session.open(port);
    session.message(JSON.stringify({ type: 'auth', visitor_token: 'vt_x' }));
    await new Promise((r) => setTimeout(r, 0));
    hub.messageCreated(message('msg_4', 'operator', 'after'));
    running.emit({ type: 'token', delta: 'new' });
    running.emit({ type: 'done', finish_reason: 'stop' });
    session.closed();
    hub.messageCreated(message('msg_5', 'operator', 'after the socket closed'));

    expect(frames).toEqual([
      { type: 'message', conversation_id: 'conv_1', message_id: 'msg_1', role: 'visitor', content: 'q1', turn_id: 'turn_1', created_at: '2025-01-01T00:00:00.000Z' },
      { type: 'message', conversation_id: 'conv_1', message_id: 'msg_2', role: 'agent', content: 'old', turn_id: 'turn_1', created_at: '2025-01-01T00:00:00.000Z' },
      { type: 'message', conversation_id: 'conv_1', message_id: 'msg_3', role: 'operator', content: 'stored before the read', turn_id: null, created_at: '2025-01-01T00:00:00.000Z' },
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_2' },
      { type: 'token', delta: 'after', role: 'operator', conversation_id: 'conv_1' },
      { type: 'message', message_id: 'msg_4', role: 'operator', conversation_id: 'conv_1' },
      { type: 'done', finish_reason: 'stop', role: 'operator', conversation_id: 'conv_1' },
      { type: 'token', delta: 'new', conversation_id: 'conv_1' },
      { type: 'done', finish_reason: 'stop', conversation_id: 'conv_1' },
    ]);
    expect(closes).toEqual([]);
    expect(hub.listeners('org_1', 'conv_1')).toBe(0);
  });
});

describe('CORS and Origin rules', () => {
  it('["*"] allows any page; a list allows its origins exactly (case-insensitively); no Origin is not a page', () => {
    expect(originAllowed(['*'], 'https://any.example')).toBe(true);
    expect(originAllowed(['https://shop.example'], 'https://SHOP.example')).toBe(true);
    expect(originAllowed(['https://shop.example'], 'https://shop.example:8443')).toBe(false);
    expect(originAllowed(['https://shop.example'], 'http://shop.example')).toBe(false);
    expect(originAllowed(['https://shop.example'], undefined)).toBe(true);
  });

  it('the response and preflight headers', () => {
    expect(corsHeaders(undefined, ['*'])).toEqual({});
    expect(corsHeaders('https://a.example', ['*'])).toEqual({ 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'X-Request-Id, Retry-After' });
    expect(corsHeaders('https://a.example', ['https://a.example'])).toEqual({
      'Access-Control-Allow-Origin': 'https://a.example', 'Access-Control-Expose-Headers': 'X-Request-Id, Retry-After', Vary: 'Origin',
    });
    expect(() => corsHeaders('https://b.example', ['https://a.example'])).toThrow(expect.objectContaining({ code: 'origin_not_allowed', status: 403 }));
    expect(preflightHeaders('https://a.example', undefined, ['GET'])).toEqual({
      'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'X-Request-Id, Retry-After',
      'Access-Control-Allow-Methods': 'GET, OPTIONS', 'Access-Control-Allow-Headers': 'Content-Type, X-Visitor-Token, Last-Event-ID', 'Access-Control-Max-Age': '600',
    });
  });
});

describe('client frames', () => {
  it('parses the chat frames and refuses unknown types and fields', () => {
    expect(parseFrame(ChatClientFrame, '{"type":"resume","turn_id":"turn_1","after_seq":3}')).toEqual({ ok: true, frame: { type: 'resume', turn_id: 'turn_1', after_seq: 3 } });
    expect(parseFrame(ChatClientFrame, '{"type":"cancel"}')).toEqual({ ok: true, frame: { type: 'cancel' } });
    expect(parseFrame(ChatClientFrame, '[1')).toEqual({ ok: false, code: 'invalid_json', message: 'A frame must be one JSON object.' });
    expect(parseFrame(ChatClientFrame, '{"type":"ping","x":1}')).toMatchObject({ ok: false, code: 'validation_failed' });
    expect(parseFrame(ChatClientFrame, '{"type":"resume","turn_id":"turn_1","after_seq":-1}')).toMatchObject({ ok: false, code: 'validation_failed' });
    expect(parseFrame(ListenClientFrame, '{"type":"auth","visitor_token":"vt_1","after_message_id":"msg_1"}')).toMatchObject({ ok: true });
    expect(parseFrame(ListenClientFrame, '{"type":"auth","visitor_token":"vt_1","after_message_id":"nope"}')).toMatchObject({ ok: false, code: 'validation_failed' });
  });
});
