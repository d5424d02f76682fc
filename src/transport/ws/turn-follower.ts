import { subscribeFrom, type ReadFrom, type TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { ChannelFrames } from './server-frames.js';

/** Turn ids remembered per socket to ignore a turn offered twice. */
const MAX_REMEMBERED = 1024;

interface Following {
  channel: TurnChannel;
  unsubscribe: (() => void) | undefined;
}

interface Lane {
  current: Following | undefined;
  waiting: Array<{ channel: TurnChannel; from: ReadFrom }>;
}

/**
 * Follows turn channels for one socket and writes their events as frames, one turn at a time per
 * conversation: a turn queued behind another in the same conversation has emitted its `conversation`
 * event already, but its frames wait until the earlier turn's `done`/`error` went out (it cannot start
 * before that anyway), so the frames of a turn are contiguous on the socket and a client can count them
 * for `resume` (`after_seq` = frames received of that turn). Turns of different conversations interleave.
 */
export class TurnFollower {
  private readonly lanes = new Map<string, Lane>();
  private readonly seen = new Set<string>();
  private closed = false;

  /**
   * @param emit writes one frame to the socket
   * @param frames the shared frame builder
   * @param gone called for a turn whose events are no longer kept (nothing of it was written)
   */
  constructor(
    private readonly emit: (frame: string) => void,
    private readonly frames: ChannelFrames,
    private readonly gone: (channel: TurnChannel) => void,
  ) {}

  /**
   * Writes `channel`'s events from `from` (`'origin'`: this socket's own turn, every event; a number: the
   * events after it, replayed, then live) once the earlier turns of its conversation are written. A turn
   * this socket already follows or followed is ignored (a listener can learn of one turn twice: as pending
   * and as started).
   */
  follow(channel: TurnChannel, from: ReadFrom = 0): void {
    if (this.closed || this.seen.has(channel.turnId)) {
      if (from === 'origin') channel.releaseOrigin();
      return;
    }
    this.seen.add(channel.turnId);
    // Bounded: only recent turns can be offered twice (the overlap of a catch-up and live events).
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.values().next().value!);
    let lane = this.lanes.get(channel.conversationId);
    if (lane === undefined) this.lanes.set(channel.conversationId, (lane = { current: undefined, waiting: [] }));
    if (lane.current !== undefined) lane.waiting.push({ channel, from });
    else this.start(channel.conversationId, lane, channel, from);
  }

  /** True when this socket follows or followed turn `turnId`. */
  knows(turnId: string): boolean {
    return this.seen.has(turnId);
  }

  /** The turns being written now (one per conversation) and those waiting behind them. */
  turns(): TurnChannel[] {
    const out: TurnChannel[] = [];
    for (const lane of this.lanes.values()) {
      if (lane.current !== undefined) out.push(lane.current.channel);
      for (const w of lane.waiting) out.push(w.channel);
    }
    return out;
  }

  /** Stops following everything (the socket closed). */
  close(): void {
    this.closed = true;
    for (const lane of this.lanes.values()) {
      lane.current?.unsubscribe?.();
      for (const w of lane.waiting) if (w.from === 'origin') w.channel.releaseOrigin();
    }
    this.lanes.clear();
  }

  private start(conversationId: string, lane: Lane, channel: TurnChannel, from: ReadFrom): void {
    const following: Following = { channel, unsubscribe: undefined };
    lane.current = following;
    const unsubscribe = subscribeFrom(channel, {
      onEvent: (seq, event, json) => this.emit(this.frames.frame(channel, seq, event, json)),
      onEnd: () => { if (lane.current === following) this.next(conversationId, lane); },
    }, from);
    if (unsubscribe === undefined) {
      this.gone(channel);
      if (lane.current === following) this.next(conversationId, lane);
      return;
    }
    following.unsubscribe = unsubscribe;
  }

  private next(conversationId: string, lane: Lane): void {
    lane.current = undefined;
    if (this.closed) return;
    const w = lane.waiting.shift();
    if (w !== undefined) this.start(conversationId, lane, w.channel, w.from);
    else if (this.lanes.get(conversationId) === lane) this.lanes.delete(conversationId);
  }
}
