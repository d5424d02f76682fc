import type { Logger } from '../../log/logger.js';
import { subscribeFrom, type ReadFrom, type TurnChannel } from '../../runtime/turn/turn-channel.js';
import type { StreamEvent } from '../../vocabulary/stream-event.js';

/** Where SSE bytes go: the transport's response, already carrying status and headers. */
export interface SseSink {
  /**
   * Hands a chunk to the connection. Never blocks and never drops: what the socket cannot take yet
   * is kept (and counted in `bufferedBytes`) until it can.
   */
  write(chunk: string): void;
  /** Ends the response after everything written so far. */
  end(): void;
  /** Bytes handed to `write` that the socket has not taken yet (kept by the sink or the server), bytes. */
  bufferedBytes(): number;
  /** Force-closes the connection. */
  abort(): void;
}

/** The SSE frame of one event: `id: <turn_id>:<seq>`, one `data:` line (JSON has no raw newlines), blank line. */
export function sseFrame(turnId: string, seq: number, json: string): string {
  return `id: ${turnId}:${seq}\ndata: ${json}\n\n`;
}

/**
 * How a turn's events become SSE bytes on one response, when not as Parley's own events (sseFrame): the
 * OpenAI-compatible endpoint frames them as `chat.completion.chunk`s. `frame` is called once per event,
 * in order, synchronously, with the event's shared JSON (TurnChannel); it returns the bytes to write for
 * it: any number of whole SSE events, or '' for none. It is on the token hot path: build strings, no more.
 */
export interface SseFramer {
  frame(seq: number, event: StreamEvent, json: string): string;
}

/** The heartbeat comment (API.md "Chat": `: ping` comment lines keep idle streams open). */
export const SSE_PING = ': ping\n\n';

/** Default slow-consumer bound of {@link SseHub}, bytes (4 MiB). */
export const DEFAULT_SSE_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** Options of {@link SseHub}. */
export interface SseHubOptions {
  /** A stream with no write for this long gets a `: ping` comment, ms. */
  heartbeatMs: number;
  /**
   * A client whose connection has more than this many bytes not yet taken by its socket (events
   * and pings alike) is disconnected, bytes. Default {@link DEFAULT_SSE_MAX_BUFFERED_BYTES}.
   */
  maxBufferedBytes?: number;
  /** Receives one `warn` line per slow client disconnected. */
  logger?: Logger;
}

interface LiveStream {
  sink: SseSink;
  turnId: string;
  lastWriteAt: number;
  /** Ended, disconnected or detached: nothing more is written. */
  closed: boolean;
  /** The channel subscription; undefined while `subscribe` is still replaying. */
  unsubscribe: (() => void) | undefined;
  /** How events become bytes; undefined: Parley's own events (sseFrame). */
  framer: SseFramer | undefined;
  /** Frames of events emitted in the current synchronous run, written together at the next microtask. */
  pending: string;
  flushScheduled: boolean;
}

/**
 * Writes turn channels as Server-Sent Events (WHATWG HTML "Server-sent events") and keeps idle streams
 * open with `: ping` comments. One timer serves every live stream: a per-stream timer would cost a
 * timer object and a wake-up per connection.
 *
 * Events emitted in one synchronous run of code (the tail of a turn: citations, message, usage, done; the
 * deltas of one upstream read; a replay) go out as one write at the next microtask: one syscall, no
 * added latency (microtasks run before the event loop moves on).
 *
 * Slow consumers: after every write (event or ping) the sink's `bufferedBytes()` is compared with
 * `maxBufferedBytes`; past it the client is disconnected and a warning is logged. Only the
 * subscription ends: the turn runs on and its reply is stored (DESIGN.md "A client that disconnects
 * only unsubscribes"), so the client can fetch the messages (SPEC.md 4 rule 5).
 */
export class SseHub {
  private readonly live = new Set<LiveStream>();
  private readonly timer: NodeJS.Timeout;
  private readonly heartbeatMs: number;
  private readonly maxBufferedBytes: number;
  private readonly logger: Logger | undefined;

  /** @throws RangeError when `maxBufferedBytes` is not a positive integer. */
  constructor(opts: SseHubOptions) {
    this.heartbeatMs = opts.heartbeatMs;
    this.maxBufferedBytes = opts.maxBufferedBytes ?? DEFAULT_SSE_MAX_BUFFERED_BYTES;
    if (!Number.isInteger(this.maxBufferedBytes) || this.maxBufferedBytes < 1) {
      throw new RangeError(`maxBufferedBytes must be a positive integer, got ${String(opts.maxBufferedBytes)}`);
    }
    this.logger = opts.logger;
    this.timer = setInterval(() => this.heartbeat(), this.heartbeatMs).unref();
  }

  /**
   * Streams `channel` to `sink` from `from` (`'origin'`: the turn's own client, every event; a number: the
   * events after it) until the terminal event, then ends the response, each event framed by `framer`
   * (default: Parley's own events, `id: <turn_id>:<seq>` and `data:`). Returns the function to call when
   * the client goes away (it only unsubscribes).
   */
  attach(sink: SseSink, channel: TurnChannel, from: ReadFrom, framer?: SseFramer): () => void {
    const stream: LiveStream = {
      sink, turnId: channel.turnId, lastWriteAt: Date.now(), closed: false, unsubscribe: undefined, framer, pending: '', flushScheduled: false,
    };
    this.live.add(stream);
    const unsubscribe = subscribeFrom(channel, {
      onEvent: (seq, event, json) => {
        if (stream.closed) return;
        const framer = stream.framer;
        if (framer === undefined) {
          stream.pending += sseFrame(stream.turnId, seq, json);
        } else {
          const frame = framer.frame(seq, event, json);
          if (frame.length === 0) return;
          stream.pending += frame;
        }
        if (!stream.flushScheduled) {
          stream.flushScheduled = true;
          queueMicrotask(() => this.flush(stream));
        }
      },
      onEnd: () => {
        if (stream.closed) return;
        this.flush(stream);
        if (stream.closed) return; // disconnected by that last write
        this.detach(stream);
        sink.end();
      },
    }, from);
    if (unsubscribe === undefined) {
      // A reader whose events after `from` are no longer kept (the caller checked, but not in this tick): end.
      if (!stream.closed) {
        this.detach(stream);
        sink.end();
      }
      return () => {};
    }
    stream.unsubscribe = unsubscribe;
    // Disconnected (too slow) during the replay inside `subscribe`, before the unsubscribe existed.
    if (stream.closed) unsubscribe();
    // What the replay gathered goes out now, as one write.
    else this.flush(stream);
    return () => this.detach(stream);
  }

  /** Live SSE streams. */
  get size(): number {
    return this.live.size;
  }

  /** Writes the frames gathered for `stream` (if any, and if it is still open). */
  private flush(stream: LiveStream): void {
    stream.flushScheduled = false;
    const chunk = stream.pending;
    if (chunk.length === 0) return;
    stream.pending = '';
    if (!stream.closed) this.send(stream, chunk);
  }

  /** Writes `chunk` and disconnects the client when its buffered bytes pass the bound. */
  private send(stream: LiveStream, chunk: string): void {
    stream.lastWriteAt = Date.now();
    stream.sink.write(chunk);
    const buffered = stream.sink.bufferedBytes();
    if (buffered <= this.maxBufferedBytes) return;
    this.detach(stream);
    this.logger?.warn(
      { turn_id: stream.turnId, buffered_bytes: buffered, max_buffered_bytes: this.maxBufferedBytes },
      'SSE client too slow: disconnected (the turn goes on and its reply is stored)',
    );
    stream.sink.abort();
  }

  /** Stops writing to `stream` and drops its subscription (idempotent). */
  private detach(stream: LiveStream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.live.delete(stream);
    stream.unsubscribe?.();
  }

  private heartbeat(): void {
    const cutoff = Date.now() - this.heartbeatMs;
    for (const s of this.live) {
      if (s.lastWriteAt <= cutoff) this.send(s, SSE_PING);
    }
  }

  /** Stops the heartbeat timer (shutdown). */
  close(): void {
    clearInterval(this.timer);
  }
}
