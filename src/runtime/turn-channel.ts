import { isTerminal, type StreamEvent } from './stream-events.js';

/** One emitted event: `seq` counts from 1 per turn; `json` is the serialized event (made once, shared by every subscriber). */
export interface ChannelEntry {
  seq: number;
  event: StreamEvent;
  json: string;
}

/** A subscriber: `onEvent` for each entry in order, `onEnd` once after the terminal event. */
export interface ChannelSubscriber {
  onEvent(entry: ChannelEntry): void;
  onEnd(): void;
}

/**
 * The per-turn fan-out channel (DESIGN.md "One chat turn, as data", step 4): every event of a turn is
 * serialized once, appended to a replay buffer and handed synchronously to every subscriber (SSE
 * responses, sockets, one-shot collectors). Subscribing with `afterSeq` replays what came after it, then
 * follows live, which is how a dropped client resumes (API.md `Last-Event-ID`). Unsubscribing never
 * affects the turn.
 */
export class TurnChannel {
  readonly turnId: string;
  readonly conversationId: string;
  readonly orgId: string;
  private readonly entries: ChannelEntry[] = [];
  private readonly subscribers = new Set<ChannelSubscriber>();
  private endedAt = 0;

  constructor(turnId: string, conversationId: string, orgId: string) {
    this.turnId = turnId;
    this.conversationId = conversationId;
    this.orgId = orgId;
  }

  /** True once `done` or `error` was emitted. */
  get ended(): boolean {
    return this.endedAt !== 0;
  }

  /** When the turn ended (epoch ms), 0 while running. */
  get endedAtMs(): number {
    return this.endedAt;
  }

  /** Sequence number of the last event, 0 before the first. */
  get lastSeq(): number {
    return this.entries.length;
  }

  /** Appends an event and delivers it. Events after the terminal one are dropped (a turn ends once). */
  emit(event: StreamEvent): void {
    if (this.endedAt !== 0) return;
    // Tokens are most of the traffic: their JSON is built directly rather than by walking the object.
    const json = event.type === 'token' ? `{"type":"token","delta":${JSON.stringify(event.delta)}}` : JSON.stringify(event);
    const entry: ChannelEntry = { seq: this.entries.length + 1, event, json };
    this.entries.push(entry);
    const terminal = isTerminal(event);
    if (terminal) this.endedAt = Date.now();
    for (const sub of this.subscribers) {
      try {
        sub.onEvent(entry);
      } catch {
        // A broken subscriber (e.g. a closed socket) must not stop the turn or its other subscribers.
        this.subscribers.delete(sub);
      }
    }
    if (terminal) {
      for (const sub of this.subscribers) {
        try { sub.onEnd(); } catch { /* same as above */ }
      }
      this.subscribers.clear();
    }
  }

  /**
   * Replays entries with seq > `afterSeq` (default 0: all) to `sub`, then delivers live ones until the
   * end. Returns the unsubscribe function.
   */
  subscribe(sub: ChannelSubscriber, afterSeq = 0): () => void {
    for (let i = Math.max(0, afterSeq); i < this.entries.length; i++) sub.onEvent(this.entries[i]!);
    if (this.endedAt !== 0) {
      sub.onEnd();
      return () => {};
    }
    this.subscribers.add(sub);
    return () => { this.subscribers.delete(sub); };
  }

  /** Number of live subscribers. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }
}
