/**
 * Pure pieces of the WebSocket load generator (bench/lib/ws-load.ts), unit-tested in
 * test/unit/bench-ws-frames.test.ts: what a server frame is (by byte markers, without parsing the JSON),
 * the timing of one stream's tokens (the same definitions as the SSE client in raw-client.ts), and the
 * open-files arithmetic of a socket-holding process.
 */
import type { Samples } from './stats.js';

/** What a Parley server frame is, for counting: a stream `token`, the end (`done`), an `error`, `pong`, anything else. */
export type FrameKind = 'token' | 'done' | 'error' | 'pong' | 'other';

const TOKEN = Buffer.from('"type":"token"', 'latin1');
const DONE = Buffer.from('"type":"done"', 'latin1');
const ERROR = Buffer.from('"type":"error"', 'latin1');
const PONG = Buffer.from('"type":"pong"', 'latin1');
const OVERLOADED = Buffer.from('"code":"overloaded"', 'latin1');

/**
 * The kind of one server frame (one JSON object per WebSocket message, API.md "WebSockets"), found by its
 * `"type":"..."` marker as JSON.stringify writes it (no spaces). A frame is one event, so the first marker
 * found decides; a token whose text contains `"type":"done"` is escaped in JSON (`\"`), so it cannot
 * match a later marker by mistake.
 */
export function frameKind(frame: Buffer): FrameKind {
  if (frame.indexOf(TOKEN) >= 0) return 'token';
  if (frame.indexOf(DONE) >= 0) return 'done';
  if (frame.indexOf(ERROR) >= 0) return 'error';
  if (frame.indexOf(PONG) >= 0) return 'pong';
  return 'other';
}

/** True for an `error` frame whose code is `overloaded` (Parley's admission control refused the turn: a typed refusal). */
export function isOverloadedFrame(frame: Buffer): boolean {
  return frame.indexOf(ERROR) >= 0 && frame.indexOf(OVERLOADED) >= 0;
}

/**
 * The token timing of one stream, with the SSE client's definitions (raw-client.ts `Exchange`): the
 * largest silence is the larger of (first token time - t0 - the upstream's configured TTFT) and every gap
 * between consecutive tokens; the inter-token gaps minus the pacing interval go to `gaps` from the
 * token2 -> token3 gap on (token1 -> token2 depends on the phase of the mock's shared timer). Times in ms
 * (performance.now()).
 */
export class TokenClock {
  tokens = 0;
  firstTokenAt = 0;
  lastTokenAt = 0;
  maxGapMs = 0;

  /**
   * @param t0 when the message frame was sent (ms)
   * @param expectFirstMs the upstream's configured time to first token (ms), subtracted from the first silence
   * @param intervalMs the upstream's pacing (ms), subtracted from every recorded gap
   * @param gaps where the added gaps go (undefined: not recorded)
   */
  constructor(readonly t0: number, private readonly expectFirstMs: number, private readonly intervalMs: number, private readonly gaps?: Samples) {}

  /** One token frame arrived at `now` (ms). */
  token(now: number): void {
    if (this.tokens === 0) {
      this.firstTokenAt = now;
      const g = now - this.t0 - this.expectFirstMs;
      if (g > this.maxGapMs) this.maxGapMs = g;
    } else {
      const g = now - this.lastTokenAt;
      if (g > this.maxGapMs) this.maxGapMs = g;
      if (this.gaps && this.tokens >= 2) this.gaps.push(g - this.intervalMs);
    }
    this.tokens++;
    this.lastTokenAt = now;
  }

  /** Time to the first token from t0 (ms); NaN before it. */
  get ttftMs(): number {
    return this.tokens > 0 ? this.firstTokenAt - this.t0 : Number.NaN;
  }
}

/**
 * File descriptors a process needs to hold `sockets` connections: one per socket plus `reserve` for
 * everything else (stdio, the event loop's own, a database, listening sockets). Throws an Error saying
 * how to raise it when `limit` (the process's `ulimit -n`) is lower.
 */
export function checkOpenFiles(who: string, sockets: number, limit: number, reserve = 256): void {
  const needed = sockets + reserve;
  if (Number.isFinite(limit) && limit < needed) {
    throw new Error(
      `${who}: the open-files limit is ${limit}, but holding ${sockets} sockets needs about ${needed}. `
      + `Raise it (the bench asks for 65536 and gets at most the hard limit: \`ulimit -Hn\`), e.g. \`ulimit -n ${needed}\` as root or in /etc/security/limits.conf, `
      + 'or run with fewer connections.',
    );
  }
}

/** The soft open-files limit of `pid` ("Max open files" in /proc/<pid>/limits, text `content`); NaN when absent or unlimited. */
export function parseOpenFilesLimit(content: string): number {
  const m = /^Max open files\s+(\d+|unlimited)\s+/m.exec(content);
  if (!m || m[1] === 'unlimited') return Number.NaN;
  return Number(m[1]);
}
