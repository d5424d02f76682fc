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
 */
export class TurnChannel {
  readonly turnId: string;
  readonly conversationId: string;
  readonly orgId: string;
  private readonly kept: Kept[] = [];
  private readonly subscribers = new Set<ChannelSubscriber>();
  private seq = 0;
  private keptChars = 0;
  private replayable = true;
  private endedAt = 0;
  private last: StreamEvent | undefined;
  private readonly maxChars: number;
  private readonly onEnded: ((channel: TurnChannel) => void) | undefined;

  constructor(turnId: string, conversationId: string, orgId: string, limits: ReplayLimits, onEnded?: (channel: TurnChannel) => void) {
    this.turnId = turnId;
    this.conversationId = conversationId;
    this.orgId = orgId;
    this.maxChars = limits.maxChars;
    this.onEnded = onEnded;
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

  /** Characters the replay buffer holds (0 once it gave up keeping events). */
  get retainedChars(): number {
    return this.keptChars;
  }

  /** False once the buffer passed its cap: events can no longer be replayed from the start. */
  get isReplayable(): boolean {
    return this.replayable;
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
    if (this.replayable) this.keep(seq, event, json);
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
    if (this.keptChars > this.maxChars) this.dropReplay();
  }

  /** Stops keeping events and frees what was kept (the buffer passed its cap, or the registry evicted it). */
  dropReplay(): void {
    this.replayable = false;
    this.kept.length = 0;
    this.keptChars = 0;
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
