import { isTerminal, type StreamEvent } from '../../vocabulary/stream-event.js';

/**
 * A subscriber of a turn's events. `onEvent` gets each event in order with its sequence number (the
 * `conversation` event is 1) and its JSON, serialized once and shared by every subscriber; `onEnd` is
 * called once after the terminal event (`done` or `error`).
 */
export interface ChannelSubscriber {
  onEvent(seq: number, event: StreamEvent, json: string): void;
  onEnd(): void;
}

/** Bounds of a channel's replay buffer. */
export interface ReplayLimits {
  /**
   * Most characters (UTF-16 code units of the events' JSON, token text counted once) a channel keeps
   * for replay. Past it the channel stops keeping events (live subscribers still get them) and a late
   * subscriber is refused: it must fetch the stored messages instead.
   */
  maxChars: number;
}

/**
 * Where a subscriber of a turn's channel starts: `'origin'`, the turn's own client (the request or socket
 * whose message started it: TurnChannel.subscribeOrigin, every event whatever the replay retention), or a
 * sequence number, a reader that replays what came after it (TurnChannel.subscribe: 0 for all, while kept).
 */
export type ReadFrom = 'origin' | number;

/** Subscribes `sub` to `channel` from `from` (see {@link ReadFrom}); the unsubscribe function, or undefined when not kept. */
export function subscribeFrom(channel: TurnChannel, sub: ChannelSubscriber, from: ReadFrom): (() => void) | undefined {
  return from === 'origin' ? channel.subscribeOrigin(sub) : channel.subscribe(sub, from);
}

/** Non-token events are kept as their JSON; a run of consecutive tokens as one text plus end offsets. */
type Kept =
  | { kind: 'event'; seq: number; event: StreamEvent; json: string }
  | { kind: 'tokens'; firstSeq: number; text: string; ends: number[] };

/**
 * What the JSON of every `token` event starts with: `tokenJson(delta)` is this, `JSON.stringify(delta)`
 * and `}`, so a subscriber can take the delta's JSON string out of it without encoding it again.
 */
export const TOKEN_JSON_PREFIX = '{"type":"token","delta":';

/** `{"type":"token","delta":...}` built directly (tokens are most of the traffic). */
export function tokenJson(delta: string): string {
  return `${TOKEN_JSON_PREFIX}${JSON.stringify(delta)}}`;
}

/**
 * The per-turn fan-out channel (DESIGN.md "One chat turn, as data", step 4): every event of a turn is
 * serialized once and handed synchronously, in order, to every subscriber (SSE responses, sockets,
 * one-shot collectors), and kept in a replay buffer so that a dropped client can resume after any
 * sequence number (API.md `Last-Event-ID`). Unsubscribing never affects the turn.
 *
 * Memory: tokens are kept as one string per run of consecutive tokens plus one offset per token (the
 * frames are rebuilt on replay, byte-identical), so a long reply costs about its text, not an object and
 * a JSON string per token. The buffer is capped at `limits.maxChars`.
 *
 * The turn's own client (the request or socket whose message started it: ChatService.send hands it the
 * channel once the visitor message is durable, and the turn may have run, even ended, by then) never
 * depends on that buffer's retention: a channel made with `awaitsOrigin` keeps every event for it until it
 * subscribes through {@link subscribeOrigin} (or gives up: {@link releaseOrigin}), even past the cap or after
 * the registry dropped its replay (src/runtime/turn/turn-registry.ts). Replay retention (the cap,
 * PARLEY_TURN_REPLAY_BYTES, PARLEY_TURN_REPLAY_MS) only decides what other and later readers can get.
 */
export class TurnChannel {
  readonly turnId: string;
  readonly conversationId: string;
  readonly orgId: string;
  private readonly kept: Kept[] = [];
  private readonly subscribers = new Set<ChannelSubscriber>();
  private seq = 0;
  private keptChars = 0;
  /** Readers other than the origin may still replay from the start (the buffer is kept for them). */
  private replayable = true;
  /** The turn's own client has not subscribed yet (nor given up): the buffer is kept for it. */
  private originPending: boolean;
  /** Events are appended to the buffer: `replayable || originPending` (one field read per event). */
  private keeping: boolean;
  private endedAt = 0;
  private last: StreamEvent | undefined;
  private readonly maxChars: number;
  private readonly onEnded: ((channel: TurnChannel) => void) | undefined;

  /**
   * @param limits the replay cap (readers other than the origin)
   * @param onEnded called once, after the terminal event reached every subscriber
   * @param awaitsOrigin the turn's own client will subscribe later through {@link subscribeOrigin}: every
   *   event is kept for it until then, whatever happens to the replay (default false: readers only)
   */
  constructor(turnId: string, conversationId: string, orgId: string, limits: ReplayLimits, onEnded?: (channel: TurnChannel) => void, awaitsOrigin = false) {
    this.turnId = turnId;
    this.conversationId = conversationId;
    this.orgId = orgId;
    this.maxChars = limits.maxChars;
    this.onEnded = onEnded;
    this.originPending = awaitsOrigin;
    this.keeping = true;
  }

  /** True once `done` or `error` was emitted. */
  get ended(): boolean {
    return this.endedAt !== 0;
  }

  /** When the turn ended (epoch ms), 0 while running. */
  get endedAtMs(): number {
    return this.endedAt;
  }

  /** The terminal event (`done` or `error`) once emitted, else undefined. */
  get terminal(): StreamEvent | undefined {
    return this.last;
  }

  /** Sequence number of the last event, 0 before the first. */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Characters the replay buffer holds: 0 once it gave up keeping events, unless they are still kept for
   * the turn's own client (then until it subscribed).
   */
  get retainedChars(): number {
    return this.keptChars;
  }

  /**
   * False once the buffer passed its cap or its replay was dropped: readers can no longer replay from the
   * start (the turn's own client still gets every event: {@link subscribeOrigin}).
   */
  get isReplayable(): boolean {
    return this.replayable;
  }

  /** True until the turn's own client subscribed ({@link subscribeOrigin}) or gave up ({@link releaseOrigin}). */
  get awaitsOrigin(): boolean {
    return this.originPending;
  }

  /** Number of live subscribers. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /**
   * Appends an event and delivers it to every subscriber. Events after the terminal one are dropped (a
   * turn ends once). A subscriber that throws is removed; the turn and the others go on.
   */
  emit(event: StreamEvent): void {
    if (this.endedAt !== 0) return;
    const seq = ++this.seq;
    const isToken = event.type === 'token';
    const json = isToken ? tokenJson(event.delta) : JSON.stringify(event);
    if (this.keeping) this.keep(seq, event, json);
    const terminal = isTerminal(event);
    if (terminal) {
      this.endedAt = Date.now();
      this.last = event;
    }
    for (const sub of this.subscribers) {
      try {
        sub.onEvent(seq, event, json);
      } catch {
        this.subscribers.delete(sub);
      }
    }
    if (terminal) {
      for (const sub of this.subscribers) {
        try { sub.onEnd(); } catch { /* a broken subscriber must not stop the others */ }
      }
      this.subscribers.clear();
      this.onEnded?.(this);
    }
  }

  private keep(seq: number, event: StreamEvent, json: string): void {
    if (event.type === 'token') {
      const last = this.kept[this.kept.length - 1];
      this.keptChars += event.delta.length + 1;
      if (last !== undefined && last.kind === 'tokens') {
        last.text += event.delta;
        last.ends.push(last.text.length);
      } else {
        this.kept.push({ kind: 'tokens', firstSeq: seq, text: event.delta, ends: [event.delta.length] });
      }
    } else {
      this.keptChars += json.length;
      this.kept.push({ kind: 'event', seq, event, json });
    }
    if (this.replayable && this.keptChars > this.maxChars) this.dropReplay();
  }

  /**
   * Ends the replay for readers (the buffer passed its cap, or the registry evicted it) and frees what was
   * kept, unless the turn's own client is still to subscribe: then the events stay (and keep coming) for
   * it alone, and are freed once it has them.
   */
  dropReplay(): void {
    this.replayable = false;
    if (!this.originPending) this.free();
  }

  /** Stops keeping events and frees what was kept. */
  private free(): void {
    this.keeping = false;
    this.kept.length = 0;
    this.keptChars = 0;
  }

  /**
   * The turn's own client will not subscribe (it went away before it could, or answers a HEAD): what was
   * kept for it alone is freed. Idempotent; nothing changes for readers.
   */
  releaseOrigin(): void {
    this.originPending = false;
    if (!this.replayable) this.free();
  }

  /**
   * Subscribes the turn's own client: every event from the first (`conversation`), replayed from what was
   * kept for it, then live ones until the end, whatever the replay budget did meanwhile. Returns the
   * unsubscribe function. On a channel not made with `awaitsOrigin`, or once the origin subscribed or gave
   * up, this is `subscribe(sub, 0)`, and may return `undefined` like it.
   */
  subscribeOrigin(sub: ChannelSubscriber): (() => void) | undefined {
    if (!this.originPending) return this.subscribe(sub, 0);
    this.originPending = false;
    this.replay(sub, 0);
    if (!this.replayable) this.free();
    return this.follow(sub);
  }

  /**
   * Replays the events after `afterSeq` (default 0: all) to `sub`, then delivers live ones until the end.
   * Returns the unsubscribe function, or `undefined` (nothing delivered) when the events after `afterSeq`
   * are no longer kept.
   */
  subscribe(sub: ChannelSubscriber, afterSeq = 0): (() => void) | undefined {
    if (afterSeq < this.seq) {
      if (!this.replayable) return undefined;
      this.replay(sub, afterSeq);
    }
    return this.follow(sub);
  }

  /** Delivers live events to `sub` until the end (at once its end, when the turn already ended). */
  private follow(sub: ChannelSubscriber): () => void {
    if (this.endedAt !== 0) {
      sub.onEnd();
      return () => {};
    }
    this.subscribers.add(sub);
    return () => { this.subscribers.delete(sub); };
  }

  private replay(sub: ChannelSubscriber, afterSeq: number): void {
    for (const k of this.kept) {
      if (k.kind === 'event') {
        if (k.seq > afterSeq) sub.onEvent(k.seq, k.event, k.json);
        continue;
      }
      const lastSeq = k.firstSeq + k.ends.length - 1;
      if (lastSeq <= afterSeq) continue;
      for (let i = Math.max(0, afterSeq - k.firstSeq + 1); i < k.ends.length; i++) {
        const delta = k.text.slice(i === 0 ? 0 : k.ends[i - 1]!, k.ends[i]!);
        sub.onEvent(k.firstSeq + i, { type: 'token', delta }, tokenJson(delta));
      }
    }
  }
}
