import type { ReplayLimits } from './turn-channel.js';
import { TurnChannel } from './turn-channel.js';
import type { Turn } from './turn.js';

/** Options of the registry (API.md "Chat": a finished turn stays replayable for at least 5 minutes). */
export interface TurnRegistryOptions {
  /** A finished turn's channel is kept this long for resume, ms. */
  replayMs: number;
  /** Per-turn cap of the replay buffer (see TurnChannel). */
  perTurn: ReplayLimits;
  /**
   * Cap on the memory kept by all finished channels together, bytes (estimated: see {@link retainedBytesOf});
   * past it the oldest are evicted first, and their turns fall back to their stored messages. Eviction only
   * concerns readers other than a turn's own client (see {@link TurnRegistry}).
   */
  maxRetainedBytes: number;
  /** Called once for every channel whose terminal event was emitted (the live hub's `turn.ended`). */
  onEnded?: (channel: TurnChannel) => void;
}

/**
 * Running turns and the channels of recently finished ones, by turn id. Only requests that name a turn
 * (resume, cancel) and the lifecycle (drain, a crashed conversation) look turns up here; the work of a
 * turn never does (it holds its Turn object). Memory is bounded by time (`replayMs`) and by size
 * (`perTurn`, `maxRetainedBytes`).
 *
 * Those bounds govern replay for other and later readers only (a resume with Last-Event-ID, a socket's
 * `resume`, a neighbour following the turn). A turn's own client, the request or socket whose message
 * started it, can subscribe after the turn ended (a turn that finishes in the SQLite commit of its visitor
 * message ends before ChatService.send hands its channel out) and after the budget evicted it (the next
 * turn to end does that when the budget is small): its channel, made by {@link channelFor} with
 * `awaitsOrigin`, keeps the events for that client until it subscribed (TurnChannel.subscribeOrigin). What
 * an evicted channel still holds for its own client is no longer counted in {@link retained}: it is
 * delivery in flight, freed as soon as that client has it, not replay.
 */
export class TurnRegistry {
  /** Every channel's end callback: one function for all of them, not a closure per live turn. */
  private readonly channelEnded = (channel: TurnChannel): void => this.ended(channel);

  private readonly running = new Map<string, Turn>();
  /** Finished channels in the order they ended (Map keeps insertion order: oldest first). */
  private readonly finished = new Map<string, TurnChannel>();
  private finishedBytes = 0;
  /** Erased conversations (dropConversation) whose turns must leave nothing replayable, with when, ms. */
  private readonly dropped = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly opts: TurnRegistryOptions) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), Math.min(60_000, Math.max(1000, opts.replayMs))).unref();
  }

  /**
   * A channel for a new turn, wired to move the turn to "finished" when its terminal event is emitted, that
   * keeps every event for the turn's own client until it subscribed (TurnChannel `awaitsOrigin`).
   */
  channelFor(turnId: string, conversationId: string, orgId: string): TurnChannel {
    return new TurnChannel(turnId, conversationId, orgId, this.opts.perTurn, this.channelEnded, true);
  }

  /** Registers a running turn. */
  add(turn: Turn): void {
    this.running.set(turn.id, turn);
  }

  /** Forgets a turn whose visitor message could not be stored (nothing of it is replayable). */
  discard(turnId: string): void {
    this.running.delete(turnId);
  }

  /** A running turn. */
  get(turnId: string): Turn | undefined {
    return this.running.get(turnId);
  }

  /** A running or recently finished turn's channel. */
  channel(turnId: string): TurnChannel | undefined {
    return this.running.get(turnId)?.channel ?? this.finished.get(turnId);
  }

  /** Running turns (drain, crash handling). */
  all(): IterableIterator<Turn> {
    return this.running.values();
  }

  /**
   * Drops the replay of every finished turn of `conversationId` (it was erased), and of its turns that
   * end from now on (their channels end after this, once aborted), for one replay period.
   */
  dropConversation(conversationId: string): void {
    this.dropped.set(conversationId, Date.now());
    for (const [id, ch] of this.finished) if (ch.conversationId === conversationId) this.evict(id, ch);
  }

  /** Number of running turns. */
  get size(): number {
    return this.running.size;
  }

  /** Finished channels kept for resume, and the bytes they hold (estimated). */
  get retained(): { channels: number; bytes: number } {
    return { channels: this.finished.size, bytes: this.finishedBytes };
  }

  private ended(channel: TurnChannel): void {
    this.opts.onEnded?.(channel);
    if (!this.running.delete(channel.turnId)) return; // withdrawn or never registered (a forwarded message): nothing to keep
    if (this.dropped.size > 0 && this.dropped.has(channel.conversationId)) {
      channel.dropReplay();
      return;
    }
    if (this.opts.replayMs === 0 || !channel.isReplayable) return;
    this.finished.set(channel.turnId, channel);
    this.finishedBytes += retainedBytesOf(channel);
    // Oldest first, until the total fits (the newest always stays, it fits its own per-turn cap).
    for (const [id, ch] of this.finished) {
      if (this.finishedBytes <= this.opts.maxRetainedBytes || id === channel.turnId) break;
      this.evict(id, ch);
    }
  }

  private evict(id: string, ch: TurnChannel): void {
    this.finished.delete(id);
    this.finishedBytes -= retainedBytesOf(ch);
    ch.dropReplay();
  }

  private sweep(now: number): void {
    for (const [id, at] of this.dropped) if (now - at > this.opts.replayMs) this.dropped.delete(id);
    for (const [id, ch] of this.finished) {
      if (now - ch.endedAtMs <= this.opts.replayMs) break; // the rest ended later
      this.evict(id, ch);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/**
 * What a finished channel holds in memory, bytes, as the replay budget counts it: 2 bytes per character
 * kept (V8 stores text with any character past U+00FF in two bytes each) plus {@link CHANNEL_OVERHEAD_BYTES}
 * for the channel and its bookkeeping. An estimate, measured against the process's RSS by the
 * replay-memory bench (bench/README.md).
 */
export function retainedBytesOf(channel: TurnChannel): number {
  return channel.retainedChars * 2 + CHANNEL_OVERHEAD_BYTES;
}

/** Memory of a finished channel beyond its text, bytes: the object, its arrays and the registry's entry. */
export const CHANNEL_OVERHEAD_BYTES = 1024;
