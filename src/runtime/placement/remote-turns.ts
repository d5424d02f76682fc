/**
 * Turns that run on another process, as this process's clients see them (DESIGN.md "Several
 * processes": the owner's turn channel, followed across processes). A mirror is an ordinary TurnChannel
 * fed by an internal event stream from the process that runs the turn, so every transport here (SSE,
 * sockets, one-shot answers, resume) serves it exactly as a local turn: same events, same sequence
 * numbers, replayable from the start. One mirror per turn per process, however many local clients follow it.
 *
 * - `send` forwards a chat message to its conversation's owner: the owner stores the visitor message and
 *   runs the turn; the mirror is handed out once the owner answered with the turn's first event, and keeps
 *   every event for the client that sent the message until it subscribed (TurnChannel `awaitsOrigin`).
 * - `follow` mirrors a turn that is running, or recently ran, elsewhere (a listen socket here, a resume
 *   here of a turn that ran there).
 * A stream cut before the turn's end (the owner died) ends the mirror with `error` / `interrupted`.
 */
import type { PeerClient } from '../../cluster/peer-client.js';
import { AppError } from '../../errors/app-error.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../errors/catalogue.js';
import type { Logger } from '../../log/logger.js';
import type { StreamEvent } from '../../vocabulary/stream-event.js';
import { TurnChannel } from '../turn/turn-channel.js';

/** The internal chat route (src/transport/http/routes/internal.ts). */
export const INTERNAL_CHAT_PATH = '/internal/v1/chat';
/** The internal route that streams a local turn's events from the start: `/internal/v1/turns/{turn_id}/events`. */
export const internalTurnEventsPath = (turnId: string): string => `/internal/v1/turns/${encodeURIComponent(turnId)}/events`;

/** A forwarded chat message: what the owner needs to run ChatService.send as the receiving process would. */
export interface ForwardedChat {
  org_id: string;
  agent_id: string;
  via: 'api' | { publicKey: string };
  input: { message: string; conversation_id?: string | undefined; metadata?: Record<string, unknown> | undefined; visitor_token?: string | undefined };
  /** How long ago the request arrived at the sender, ms: the origin of the turn's timing (API.md "Chat", Timing). */
  elapsed_ms?: number | undefined;
  /** The client's own instructions for the turn (OpenAI-compatible `system` messages). */
  client_instructions?: string | undefined;
}

/** The owner no longer owns the conversation (it lost the lease meanwhile): route again. */
export class NotOwner extends Error {
  constructor() {
    super('the process asked no longer owns the conversation');
    this.name = 'NotOwner';
  }
}

/** The error a mirror ends with when its stream is cut before the turn's end. */
const CUT = {
  type: 'api_error', code: 'interrupted',
  message: 'The Parley process running this turn stopped answering before the turn ended; fetch the messages of the conversation.',
} as const;

/** Options of {@link RemoteTurns}. */
export interface RemoteTurnsOptions {
  /** A finished mirror stays replayable this long, ms (PARLEY_TURN_REPLAY_MS). */
  replayMs: number;
  /** Per-mirror replay cap, characters. */
  maxChars: number;
  /** Mirrors kept at most; past it the oldest finished ones go first. Default 10,000. */
  maxMirrors?: number;
  logger: Logger;
}

/** See the module comment. */
export class RemoteTurns {
  private readonly mirrors = new Map<string, TurnChannel>();
  private readonly following = new Map<string, Promise<TurnChannel | undefined>>();
  private readonly aborts = new Set<AbortController>();

  constructor(private readonly peers: PeerClient, private readonly opts: RemoteTurnsOptions) {}

  /** The mirror of `turnId`, if this process has one (running or kept for replay). */
  get(turnId: string): TurnChannel | undefined {
    return this.mirrors.get(turnId);
  }

  /**
   * Forwards `chat` to the owner at `url` and resolves with the mirror of the turn it started once the
   * owner stored the visitor message. Throws the owner's AppError (404, 409, 503, ...), NotOwner, or
   * PeerUnreachable (no answer: the caller decides whether the owner is dead).
   */
  async send(url: string, chat: ForwardedChat): Promise<TurnChannel> {
    const channel = await this.open(url, INTERNAL_CHAT_PATH, 'POST', chat, chat.org_id, true);
    if (channel === undefined) throw new AppError('internal_error', 'The owning process answered without a turn.');
    return channel;
  }

  /**
   * The mirror of turn `turnId` of `orgId`, run by the process at `url`: replayed from its first event, then
   * followed live. Undefined when that process does not know the turn (never ran there, or no longer kept).
   * Concurrent calls for one turn share one stream. Throws PeerUnreachable.
   */
  follow(url: string, orgId: string, turnId: string): Promise<TurnChannel | undefined> {
    const known = this.mirrors.get(turnId);
    if (known !== undefined) return Promise.resolve(known.isReplayable ? known : undefined);
    let pending = this.following.get(turnId);
    if (pending === undefined) {
      pending = this.open(url, internalTurnEventsPath(turnId), 'GET', undefined, orgId, false).finally(() => this.following.delete(turnId));
      this.following.set(turnId, pending);
    }
    return pending;
  }

  /** Cuts every stream (shutdown): their mirrors end with `error` / `interrupted`. */
  close(): void {
    for (const a of this.aborts) a.abort(new Error('shutting down'));
    this.aborts.clear();
  }

  /**
   * Forgets the mirrors of `conversationId`'s turns (it was erased on its owner): a running one ends with
   * `error` / `not_found`, and none stays replayable.
   */
  dropConversation(conversationId: string): void {
    for (const [id, ch] of this.mirrors) {
      if (ch.conversationId !== conversationId) continue;
      this.mirrors.delete(id);
      if (!ch.ended) ch.emit({ type: 'error', error: { type: 'not_found_error', code: 'not_found', message: 'This conversation was erased.' } });
      ch.dropReplay();
    }
  }

  /** Mirrors kept (tests, metrics). */
  get size(): number {
    return this.mirrors.size;
  }

  /**
   * Opens the stream and resolves once its first event came (the mirror exists then) or the answer was
   * an error. 404 resolves undefined; 421 throws NotOwner; another error status throws its AppError.
   * `origin`: the mirror is handed to the client whose message started the turn (TurnChannel `awaitsOrigin`).
   */
  private open(url: string, path: string, method: 'GET' | 'POST', body: unknown, orgId: string, origin: boolean): Promise<TurnChannel | undefined> {
    return new Promise<TurnChannel | undefined>((resolve, reject) => {
      const abort = new AbortController();
      this.aborts.add(abort);
      let channel: TurnChannel | undefined;
      let settled = false;
      const settle = (f: () => void) => { if (!settled) { settled = true; f(); } };
      this.peers.stream(url, method, path, body, {
        onData: (data) => {
          let event: StreamEvent;
          try { event = JSON.parse(data) as StreamEvent; } catch { return; }
          if (channel === undefined) {
            if (event.type !== 'conversation') return;
            channel = new TurnChannel(event.turn_id, event.conversation_id, orgId, { maxChars: this.opts.maxChars }, undefined, origin);
            this.keep(channel);
            channel.emit(event);
            settle(() => resolve(channel));
            return;
          }
          channel.emit(event);
        },
        onEnd: (err) => {
          this.aborts.delete(abort);
          if (channel !== undefined && !channel.ended) {
            if (err !== undefined) this.opts.logger.warn({ err, turn_id: channel.turnId, url }, 'the stream of a turn run by another process was cut');
            channel.emit({ type: 'error', error: CUT });
          }
          settle(() => resolve(channel));
        },
      }, abort.signal).then((answer) => {
        if (answer.status === 200) return;
        this.aborts.delete(abort);
        if (answer.status === 404) return settle(() => resolve(undefined));
        if (answer.status === 421) return settle(() => reject(new NotOwner()));
        settle(() => reject(errorFrom(answer.status, answer.body, answer.retryAfter)));
      }, (err: unknown) => {
        this.aborts.delete(abort);
        settle(() => reject(err));
      });
    });
  }

  /** Keeps a new mirror, dropping finished ones past their replay time or past the count bound. */
  private keep(channel: TurnChannel): void {
    const now = Date.now();
    const max = this.opts.maxMirrors ?? 10_000;
    for (const [id, ch] of this.mirrors) {
      const old = ch.ended && now - ch.endedAtMs > this.opts.replayMs;
      if (!old && this.mirrors.size < max) break;
      if (!ch.ended) continue;
      this.mirrors.delete(id);
      ch.dropReplay();
    }
    this.mirrors.set(channel.turnId, channel);
  }
}

/** The AppError an owner answered with (its code kept when it is one of ours), with its Retry-After. */
export function errorFrom(status: number, body: unknown, retryAfter: string | undefined): AppError {
  const e = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = typeof e?.code === 'string' && Object.hasOwn(ERROR_CATALOGUE, e.code) ? e.code as ErrorCode : 'internal_error';
  const message = typeof e?.message === 'string' ? e.message : `The owning process answered ${status}.`;
  return new AppError(code, message, retryAfter === undefined ? {} : { headers: { 'Retry-After': retryAfter } });
}
