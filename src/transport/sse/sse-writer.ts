import type { TurnChannel } from '../../runtime/turn/turn-channel.js';

/** Where SSE bytes go: the transport's response, already carrying status and headers. */
export interface SseSink {
  /** Writes a chunk; returns false when the socket is backpressured (the chunk is still buffered). */
  write(chunk: string): boolean;
  end(): void;
  /** Bytes buffered but not yet sent, for the slow-consumer cap. */
  bufferedBytes(): number;
  /** Force-closes the connection. */
  abort(): void;
}

/** The SSE frame of one event: `id: <turn_id>:<seq>`, one `data:` line (JSON has no raw newlines), blank line. */
export function sseFrame(turnId: string, seq: number, json: string): string {
  return `id: ${turnId}:${seq}\ndata: ${json}\n\n`;
}

interface LiveStream {
  sink: SseSink;
  lastWriteAt: number;
}

/**
 * Writes turn channels as Server-Sent Events (WHATWG HTML "Server-sent events") and keeps idle streams
 * open with `: ping` comments. One timer serves every live stream: a per-stream timer would cost a
 * timer object and a wake-up per connection. A client that lets more than `maxBufferedBytes` pile up
 * is disconnected (the turn goes on; the reply is stored).
 */
export class SseHub {
  private readonly live = new Set<LiveStream>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly heartbeatMs: number, private readonly maxBufferedBytes = 4 * 1024 * 1024) {
    this.timer = setInterval(() => this.heartbeat(), heartbeatMs).unref();
  }

  /**
   * Streams `channel` to `sink` from after `afterSeq` until the terminal event, then ends the response.
   * Returns the function to call when the client goes away (it only unsubscribes).
   */
  attach(sink: SseSink, channel: TurnChannel, afterSeq: number): () => void {
    const stream: LiveStream = { sink, lastWriteAt: Date.now() };
    this.live.add(stream);
    const turnId = channel.turnId;
    let closed = false;
    const unsubscribe = channel.subscribe({
      onEvent: (seq, _event, json) => {
        if (closed) return;
        stream.lastWriteAt = Date.now();
        if (!sink.write(sseFrame(turnId, seq, json)) && sink.bufferedBytes() > this.maxBufferedBytes) {
          closed = true;
          this.live.delete(stream);
          sink.abort();
        }
      },
      onEnd: () => {
        if (closed) return;
        closed = true;
        this.live.delete(stream);
        sink.end();
      },
    }, afterSeq);
    if (unsubscribe === undefined) {
      // The events after `afterSeq` are no longer kept (the caller checked, but not in this tick): end.
      closed = true;
      this.live.delete(stream);
      sink.end();
      return () => {};
    }
    return () => {
      closed = true;
      this.live.delete(stream);
      unsubscribe();
    };
  }

  /** Live SSE streams. */
  get size(): number {
    return this.live.size;
  }

  private heartbeat(): void {
    const cutoff = Date.now() - this.heartbeatMs;
    for (const s of this.live) {
      if (s.lastWriteAt <= cutoff) {
        s.lastWriteAt = Date.now();
        s.sink.write(': ping\n\n');
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}
