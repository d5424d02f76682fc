/**
 * The socket handlers (API.md "WebSockets"): frame -> zod -> runtime, and runtime events -> frames. One
 * object per open socket; no uWS types (src/transport/uws/websocket.ts feeds them).
 */
import { AppError } from '../../errors/app-error.js';
import type { Logger } from '../../log/logger.js';
import type { ChatInput, ChatService } from '../../runtime/chat-service.js';
import type { AccessChange, LiveEvent } from '../../runtime/live/live-hub.js';
import type { ConversationService } from '../../runtime/services/conversations.js';
import type { PublicService } from '../../runtime/services/public.js';
import type { TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { AgentRecord, MessageRecord } from '../../store/records.js';
import type { Role } from '../../vocabulary/role.js';
import {
  ChatClientFrame, InboxClientFrame, ListenClientFrame, OperatorClientFrame, parseFrame,
  type ChatClientFrame as ChatFrame,
} from './frames.js';
import { ChannelFrames, errorFrame, inboxFrame, operatorPushFrames, PONG, statusFrame, storedMessageFrame } from './server-frames.js';
import { CLOSE, closeFor, type SocketPort, type SocketSession } from './socket.js';
import { TurnFollower } from './turn-follower.js';

/** What the socket handlers call: runtime services only (DESIGN.md layers). */
export interface SocketServices {
  chat: ChatService;
  public: PublicService;
  conversations: ConversationService;
  logger: Logger;
  /** Frames of turn events shared by all sockets. */
  frames: ChannelFrames;
  /** How long the listen-only socket waits for its `auth` frame, ms (API.md: 5 s). */
  authTimeoutMs: number;
}

/**
 * What a socket was opened with, so that it closes when that is taken away (API.md "Auth endpoints":
 * within 1 s, on every process): the LiveHub access keys it watches (its sign-in, person and membership;
 * its API key; its public key), the role it was opened with, and when its credential ends by itself.
 */
export interface SocketAccess {
  keys: string[];
  /** A person's role in the socket's organization when it opened: a change to another role closes it. */
  role?: Role | undefined;
  /** When the credential stops working (the end of a rotated API key's grace period), ms since the epoch. */
  endsAt?: number | null | undefined;
}

/** Longest delay setTimeout takes, ms. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The close a change of a socket's access asks for, or undefined when the socket stays open:
 * ended -> 4401 with the error code (4404 `unpublished`, and `erased` for a conversation's sockets); no longer a member -> 4403 `not_a_member`;
 * another role -> 4401 `role_changed` (the client opens a new socket, under its new role).
 */
export function closeForAccess(change: AccessChange, openedAs: Role | undefined): { code: number; reason: string } | undefined {
  if (change.kind === 'ended') return { code: change.reason === 'unpublished' || change.reason === 'erased' ? CLOSE.notFound : CLOSE.unauthenticated, reason: change.reason };
  if (change.role === null) return { code: CLOSE.forbidden, reason: 'not_a_member' };
  return change.role === openedAs ? undefined : { code: CLOSE.unauthenticated, reason: 'role_changed' };
}

/** Common plumbing: the port, access watching, a frame refused. */
abstract class BaseSession implements SocketSession {
  protected port!: SocketPort;
  private unwatch: Array<() => void> = [];
  private endTimer: NodeJS.Timeout | undefined;

  constructor(protected readonly s: SocketServices, private readonly access: SocketAccess | undefined) {}

  open(port: SocketPort): void {
    this.port = port;
    const a = this.access;
    if (a !== undefined) {
      const onChange = (change: AccessChange) => {
        const close = closeForAccess(change, a.role);
        if (close !== undefined) port.close(close.code, close.reason);
      };
      this.unwatch = a.keys.map((key) => this.s.chat.live.watchAccess(key, onChange));
      if (a.endsAt !== undefined && a.endsAt !== null) this.endAt(a.endsAt);
    }
    this.opened();
  }

  closed(): void {
    for (const off of this.unwatch) off();
    this.unwatch = [];
    clearTimeout(this.endTimer);
    this.release();
  }

  /** Closes the socket with 4401 `revoked_api_key` at `endsAt` (ms), re-arming past setTimeout's range. */
  private endAt(endsAt: number): void {
    const wait = endsAt - Date.now();
    if (wait <= 0) {
      this.port.close(CLOSE.unauthenticated, 'revoked_api_key');
      return;
    }
    this.endTimer = setTimeout(() => this.endAt(endsAt), Math.min(wait, MAX_TIMER_MS));
    this.endTimer.unref();
  }

  abstract message(text: string): void;
  protected opened(): void {}
  protected abstract release(): void;

  /** An `error` frame for a frame that failed validation (the socket stays open). */
  protected refuse(problem: { code: 'invalid_json' | 'validation_failed'; message: string }): void {
    this.port.send(errorFrame(new AppError(problem.code, problem.message)));
  }
}

/** Who a chat socket talks for: an organization's client (API key or person) or a visitor of a published agent. */
export type ChatTarget =
  | { kind: 'api'; orgId: string; agentId: string }
  | { kind: 'public'; publicKey: string; agent: AgentRecord };

/**
 * `WS /v1/agents/{agent_id}/chat/ws` and `WS /v1/public/agents/{public_key}/ws`. Frames: `message` (a
 * turn; its events come back with `conversation_id`), `cancel`, `ping`, `resume`. Once the socket has
 * chatted in a conversation, operator messages of that conversation are pushed to it as `token` (the
 * whole text), `message`, `done`, each with `role: operator`. On a public socket every message frame
 * counts against the rate limits (per client address and per visitor token): past them, an `error` frame
 * `rate_limited` with `retry_after` seconds.
 */
export class ChatSession extends BaseSession {
  // Both made on the socket's first turn: most sockets sit idle, and an idle socket's memory is counted
  // (the idle-WebSocket row of bench/: the follower with its maps and closures was ~0.7 KiB a socket).
  private followerOrUndefined: TurnFollower | undefined;
  private pushes: Map<string, () => void> | undefined;
  /**
   * The stops of the message frames whose turn is still being set up (the channel not handed out yet):
   * a `cancel` then aborts them, and each such turn ends `cancelled` as soon as it exists.
   */
  private starting: Set<AbortController> | undefined;

  constructor(s: SocketServices, private readonly target: ChatTarget, access?: SocketAccess) {
    super(s, access);
  }

  private get follower(): TurnFollower {
    return this.followerOrUndefined ??= new TurnFollower((f) => this.port.send(f), this.s.frames,
      (ch) => this.port.send(errorFrame(gone(), ch.conversationId)));
  }

  message(text: string): void {
    const arrivedAt = performance.now();
    const parsed = parseFrame(ChatClientFrame, text);
    if (!parsed.ok) return this.refuse(parsed);
    const f = parsed.frame;
    switch (f.type) {
      case 'ping': this.port.send(PONG); break;
      case 'message': void this.chat(f, arrivedAt); break;
      case 'cancel': this.cancel(f.turn_id); break;
      case 'resume': void this.resume(f); break;
    }
  }

  /** A message frame that arrived at `arrivedAt` (performance.now(), ms: the origin of the turn's timing). */
  private async chat(f: Extract<ChatFrame, { type: 'message' }>, arrivedAt: number): Promise<void> {
    const stop = new AbortController();
    const starting = this.starting ??= new Set();
    starting.add(stop);
    try {
      const input: ChatInput = { message: f.message, conversation_id: f.conversation_id, metadata: f.metadata, visitor_token: f.visitor_token, signal: stop.signal };
      let channel: TurnChannel;
      if (this.target.kind === 'public') {
        this.s.public.limit(this.port.remoteAddress, f.conversation_id === undefined ? undefined : f.visitor_token);
        channel = await this.s.public.send(this.target.publicKey, input, { arrivedAt });
      } else {
        if (f.visitor_token !== undefined) throw new AppError('validation_failed', 'visitor_token is for public sockets only.');
        channel = await this.s.chat.send(this.target.orgId, this.target.agentId, input, 'api', { arrivedAt });
      }
      if (this.port.closed) {
        channel.releaseOrigin(); // the turn goes on and is stored
        return;
      }
      this.watchOperators(channel.conversationId);
      this.follower.follow(channel, 'origin');
    } catch (err) {
      this.port.send(errorFrame(err, f.conversation_id));
    } finally {
      starting.delete(stop);
    }
  }

  /**
   * Stops the named turn of this socket, or every turn it is writing or waiting to write, and (without a
   * turn id) every turn of its message frames still being set up: a client that sends `message` and
   * `cancel` at once (a quick Stop) gets that turn cancelled too.
   */
  private cancel(turnId: string | undefined): void {
    const mine = (this.followerOrUndefined?.turns() ?? []).filter((ch) => !ch.ended && (turnId === undefined || ch.turnId === turnId));
    const settingUp = turnId === undefined && this.starting !== undefined ? [...this.starting] : [];
    for (const stop of settingUp) stop.abort();
    if (mine.length === 0 && settingUp.length === 0) {
      this.port.send(errorFrame(new AppError('not_found', turnId === undefined ? 'No turn of this socket is running.' : 'No such running turn on this socket.')));
      return;
    }
    for (const ch of mine) {
      this.s.chat.control.cancelTurn(ch.orgId, ch.conversationId, ch.turnId).catch((err: unknown) => this.port.send(errorFrame(err, ch.conversationId)));
    }
  }

  private async resume(f: Extract<ChatFrame, { type: 'resume' }>): Promise<void> {
    try {
      if (this.followerOrUndefined?.knows(f.turn_id) === true) throw new AppError('validation_failed', 'This socket already follows that turn.');
      const channel = this.target.kind === 'public'
        ? await this.s.public.turnChannel(this.target.publicKey, f.turn_id, f.visitor_token)
        : await this.s.chat.turnChannel(this.target.orgId, f.turn_id);
      if (this.port.closed) return;
      this.watchOperators(channel.conversationId);
      this.follower.follow(channel, f.after_seq);
    } catch (err) {
      this.port.send(errorFrame(err));
    }
  }

  /** Operator messages of `conversationId` are pushed to this socket from now on. */
  private watchOperators(conversationId: string): void {
    const pushes = this.pushes ??= new Map();
    if (pushes.has(conversationId)) return;
    pushes.set(conversationId, this.s.chat.live.subscribeConversation(conversationId, {
      deliver: (e) => {
        if (e.type === 'message.created' && e.message.role === 'operator') for (const frame of operatorPushFrames(e.message)) this.port.send(frame);
      },
    }));
  }

  protected release(): void {
    this.followerOrUndefined?.close();
    if (this.pushes === undefined) return;
    for (const unsubscribe of this.pushes.values()) unsubscribe();
    this.pushes.clear();
  }
}

/** What a conversation feed has already shown, so live events do not repeat the catch-up. */
interface Shown {
  messages: Set<string>;
  /** Turns whose agent reply was in the catch-up. */
  answered: Set<string>;
}

/**
 * Joins a conversation with nothing lost or doubled between catch-up and live (API.md "WebSockets"):
 * subscribe to its live events first and buffer them, note its pending turns, read the stored messages
 * after `afterId` (when `catchUp`), write them, then write the buffered events that the catch-up did not
 * already show, then go live. Returns the unsubscribe function.
 */
async function joinConversation(
  s: SocketServices, orgId: string, conversationId: string, catchUp: { afterId: string | undefined } | undefined,
  write: { message(m: MessageRecord): void; event(e: LiveEvent, shown: Shown): void; turn(channel: TurnChannel, shown: Shown): void },
): Promise<() => void> {
  const buffered: LiveEvent[] = [];
  let live = false;
  const shown: Shown = { messages: new Set(), answered: new Set() };
  const unsubscribe = s.chat.live.subscribeConversation(conversationId, {
    deliver: (e) => { if (live) write.event(e, shown); else buffered.push(e); },
  });
  try {
    // Taken now, before any wait, when this process runs the conversation; else asked of its owner.
    const pending = s.chat.localPendingTurns(conversationId) ?? await s.chat.pendingTurns(conversationId);
    if (catchUp !== undefined) {
      const messages = await s.conversations.messagesAfter(orgId, conversationId, catchUp.afterId);
      for (const m of messages) {
        shown.messages.add(m.id);
        if (m.role === 'agent' && m.turn_id !== null) shown.answered.add(m.turn_id);
        write.message(m);
      }
    }
    for (const channel of pending) write.turn(channel, shown);
    for (const e of buffered) write.event(e, shown);
    buffered.length = 0;
    live = true;
    return unsubscribe;
  } catch (err) {
    unsubscribe();
    throw err;
  }
}

/**
 * `WS /v1/public/agents/{public_key}/conversations/{conversation_id}/ws`, listen-only: the first frame
 * must be `{"type":"auth","visitor_token","after_message_id"?}` within 5 s (else close 4408; another
 * first frame closes 4401); then every message stored after `after_message_id` as `message` frames with
 * `role` and `content`, then live: the visitor's own new messages (as stored `message` frames: another tab
 * of the same visitor sees them), operator pushes, the agent's turns and `status` frames (the
 * conversation's status after each change: who answers now).
 */
export class ListenSession extends BaseSession {
  private state: 'waiting' | 'authenticating' | 'live' = 'waiting';
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private readonly follower: TurnFollower;
  private done = false;

  constructor(s: SocketServices, private readonly publicKey: string, private readonly conversationId: string, access?: SocketAccess) {
    super(s, access);
    this.follower = new TurnFollower((f) => this.port.send(f), s.frames, () => {});
  }

  protected override opened(): void {
    this.timer = setTimeout(() => this.port.close(CLOSE.authTimeout, 'auth_timeout'), this.s.authTimeoutMs);
  }

  message(text: string): void {
    const parsed = parseFrame(ListenClientFrame, text);
    if (this.state === 'waiting') {
      clearTimeout(this.timer);
      if (!parsed.ok || parsed.frame.type !== 'auth') {
        this.port.close(CLOSE.unauthenticated, 'auth_required');
        return;
      }
      this.state = 'authenticating';
      void this.authenticate(parsed.frame.visitor_token, parsed.frame.after_message_id);
      return;
    }
    if (!parsed.ok) return this.refuse(parsed);
    if (parsed.frame.type === 'ping') this.port.send(PONG);
    else this.refuse({ code: 'validation_failed', message: 'This socket is already authenticated.' });
  }

  private async authenticate(visitorToken: string, afterId: string | undefined): Promise<void> {
    let orgId: string;
    try {
      this.s.public.limit(this.port.remoteAddress, visitorToken);
      orgId = (await this.s.public.listenedConversation(this.publicKey, this.conversationId, visitorToken)).agent.org_id;
    } catch (err) {
      const c = closeFor(err);
      if (c.code === CLOSE.tooSlow) this.port.send(errorFrame(err));
      this.port.close(c.code, c.reason);
      return;
    }
    if (this.port.closed) return;
    try {
      const unsubscribe = await joinConversation(this.s, orgId, this.conversationId, { afterId }, {
        message: (m) => this.port.send(storedMessageFrame(m)),
        turn: (channel, shown) => { if (!shown.answered.has(channel.turnId)) this.follower.follow(channel); },
        event: (e, shown) => {
          if (e.type === 'turn.started' && !e.forwarded && !shown.answered.has(e.channel.turnId)) this.follower.follow(e.channel);
          else if (e.type === 'message.created' && e.message.role !== 'agent' && !shown.messages.has(e.message.id)) {
            if (e.message.role === 'operator') for (const frame of operatorPushFrames(e.message)) this.port.send(frame);
            // The visitor's own message, sent from this page or another tab: a stored message frame, before
            // the agent turn it starts (the page that sent it knows it by its turn id, and shows it once).
            else this.port.send(storedMessageFrame(e.message));
          } else if (e.type === 'conversation.status') {
            // Who answers now (a person joined, the agent is back, the conversation was closed).
            this.port.send(statusFrame(e.conversationId, e.status));
          }
        },
      });
      if (this.done) unsubscribe();
      else { this.unsubscribe = unsubscribe; this.state = 'live'; }
    } catch (err) {
      this.port.send(errorFrame(err, this.conversationId));
      this.port.close(CLOSE.policy, toReason(err));
    }
  }

  protected release(): void {
    this.done = true;
    clearTimeout(this.timer);
    this.follower.close();
    this.unsubscribe?.();
  }
}

/**
 * `WS /v1/conversations/{conversation_id}/ws`: an operator's live view. It gets the conversation's
 * visitor and operator messages as `message` frames with `role` and `content`, the agent's turns as
 * stream frames, and `status` frames; with `?after_message_id=` it first catches up on the messages
 * stored after that one. It may send `{"type":"message","content"}` as the operator.
 */
export class OperatorSession extends BaseSession {
  private unsubscribe: (() => void) | undefined;
  private readonly follower: TurnFollower;
  private done = false;

  constructor(
    s: SocketServices, private readonly orgId: string, private readonly conversationId: string,
    private readonly catchUp: { afterId: string | undefined } | undefined, access?: SocketAccess,
  ) {
    super(s, access);
    this.follower = new TurnFollower((f) => this.port.send(f), s.frames, () => {});
  }

  protected override opened(): void {
    void this.join();
  }

  private async join(): Promise<void> {
    try {
      const unsubscribe = await joinConversation(this.s, this.orgId, this.conversationId, this.catchUp, {
        message: (m) => this.port.send(storedMessageFrame(m)),
        turn: (channel, shown) => { if (!shown.answered.has(channel.turnId)) this.follower.follow(channel); },
        event: (e, shown) => {
          if (e.type === 'turn.started') {
            if (!e.forwarded && !shown.answered.has(e.channel.turnId)) this.follower.follow(e.channel);
          } else if (e.type === 'message.created') {
            if (e.message.role !== 'agent' && !shown.messages.has(e.message.id)) this.port.send(storedMessageFrame(e.message));
          } else if (e.type === 'conversation.status') {
            this.port.send(statusFrame(e.conversationId, e.status));
          }
        },
      });
      if (this.done) unsubscribe();
      else this.unsubscribe = unsubscribe;
    } catch (err) {
      this.port.send(errorFrame(err, this.conversationId));
      this.port.close(CLOSE.policy, toReason(err));
    }
  }

  message(text: string): void {
    const parsed = parseFrame(OperatorClientFrame, text);
    if (!parsed.ok) return this.refuse(parsed);
    if (parsed.frame.type === 'ping') {
      this.port.send(PONG);
      return;
    }
    this.s.chat.control.postOperatorMessage(this.orgId, this.conversationId, parsed.frame.content)
      .catch((err: unknown) => this.port.send(errorFrame(err, this.conversationId)));
  }

  protected release(): void {
    this.done = true;
    this.follower.close();
    this.unsubscribe?.();
  }
}

/**
 * `WS /v1/inbox/ws`: every conversation event of the organization: `conversation.created`,
 * `conversation.status`, `message.created` (with `role` and `content`), `turn.started`, `turn.ended`.
 */
export class InboxSession extends BaseSession {
  private unsubscribe: (() => void) | undefined;

  constructor(s: SocketServices, private readonly orgId: string, access?: SocketAccess) {
    super(s, access);
  }

  protected override opened(): void {
    this.unsubscribe = this.s.chat.live.subscribeOrg(this.orgId, {
      deliver: (e) => {
        const frame = inboxFrame(e);
        if (frame !== undefined) this.port.send(frame);
      },
    });
  }

  message(text: string): void {
    const parsed = parseFrame(InboxClientFrame, text);
    if (!parsed.ok) return this.refuse(parsed);
    this.port.send(PONG);
  }

  protected release(): void {
    this.unsubscribe?.();
  }
}

function gone(): AppError {
  return new AppError('not_found', 'The events of this turn are no longer kept; fetch the conversation messages instead.');
}

function toReason(err: unknown): string {
  return closeFor(err).reason;
}

