/**
 * WebSocket clients for integration tests: `openSocket` on undici's WebSocket (a real browser-like
 * client), and `rawUpgrade`, a small client over a raw TCP socket that sends the HTTP upgrade itself, so
 * a test can set any header (Authorization, Origin), see the status of a refused upgrade, and stop
 * reading on purpose (a slow consumer). Frames are JSON text (API.md "WebSockets").
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { WebSocket } from 'undici';

/** A received frame, parsed. */
export type Frame = Record<string, unknown> & { type: string };

/** How a socket closed: the code and reason of the server's close frame (1006 when none came). */
export interface Closed {
  code: number;
  reason: string;
}

/** What the tests use of a socket, whichever client is under it. */
export interface TestSocket {
  /** Every frame received so far, in order. */
  readonly frames: Frame[];
  /** Sends `frame` as JSON text (or a string as is). */
  send(frame: unknown): void;
  /**
   * The first frame from position `from` on (default: the first not yet returned by `next`) that
   * `match` accepts; waits up to `timeoutMs`, then rejects naming what it waited for.
   */
  next(match?: (f: Frame) => boolean, timeoutMs?: number, what?: string): Promise<Frame>;
  /** Frames until (and with) the first that `match` accepts, from the current position. */
  until(match: (f: Frame) => boolean, timeoutMs?: number, what?: string): Promise<Frame[]>;
  /** Resolves when the socket closed. */
  readonly closed: Promise<Closed>;
  /** Closes from the client side (1000). */
  close(): void;
  /** Drops the TCP connection without a close frame (a lost network). */
  drop(): void;
}

/** Shared frame bookkeeping of both clients. */
class FrameLog {
  readonly frames: Frame[] = [];
  private cursor = 0;
  private waiters: Array<() => void> = [];
  closedWith: Closed | undefined;

  push(text: string): void {
    this.frames.push(JSON.parse(text) as Frame);
    this.wake();
  }

  end(c: Closed): void {
    if (this.closedWith === undefined) this.closedWith = c;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** The frames since the cursor, for an error message (cut to 600 characters). */
  private pendingText(): string {
    const text = JSON.stringify(this.frames.slice(this.cursor));
    return text.length > 600 ? `${text.slice(0, 600)}... (${this.frames.length - this.cursor} frames)` : text;
  }

  async until(match: (f: Frame) => boolean, timeoutMs: number, what: string): Promise<Frame[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = this.cursor; i < this.frames.length; i++) {
        if (match(this.frames[i]!)) {
          const out = this.frames.slice(this.cursor, i + 1);
          this.cursor = i + 1;
          return out;
        }
      }
      if (this.closedWith !== undefined) {
        throw new Error(`socket closed (${this.closedWith.code} ${this.closedWith.reason}) while waiting for ${what}; frames: ${this.pendingText()}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; frames since cursor: ${this.pendingText()}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }
}

const any = () => true;

/**
 * Opens `url` (ws://...) with undici's WebSocket and resolves once it is open, or rejects when the
 * connection failed before opening (e.g. a refused upgrade: undici then reports 1006).
 */
export function openSocket(url: string): Promise<TestSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const log = new FrameLog();
    let resolveClosed!: (c: Closed) => void;
    const closed = new Promise<Closed>((r) => { resolveClosed = r; });
    let opened = false;
    ws.addEventListener('message', (e) => log.push(String((e as unknown as { data: unknown }).data)));
    ws.addEventListener('close', (e) => {
      const ev = e as unknown as { code: number; reason: string };
      const c = { code: ev.code, reason: ev.reason };
      log.end(c);
      resolveClosed(c);
      if (!opened) reject(new Error(`socket closed before it opened: ${c.code} ${c.reason}`));
    });
    ws.addEventListener('open', () => {
      opened = true;
      resolve({
        frames: log.frames,
        send: (f) => ws.send(typeof f === 'string' ? f : JSON.stringify(f)),
        next: async (match = any, timeoutMs = 10_000, what = 'a frame') => (await log.until(match, timeoutMs, what)).at(-1)!,
        until: (match, timeoutMs = 10_000, what = 'a frame') => log.until(match, timeoutMs, what),
        closed,
        close: () => ws.close(1000),
        drop: () => ws.close(1000), // undici gives no way to drop TCP; closing is the nearest
      });
    });
  });
}

/** The outcome of a raw upgrade: the status line's code and headers, and the socket when it was 101. */
export interface RawUpgrade {
  status: number;
  headers: Record<string, string>;
  /** The response body of a refused upgrade (e.g. the API.md error JSON). */
  body: string;
  socket: RawSocket | undefined;
}

/** A raw client socket: a TestSocket that can also stop reading and write any frame. */
export interface RawSocket extends TestSocket {
  /** Stops reading from TCP (the server's send buffer fills up). */
  pause(): void;
  resume(): void;
  /** Bytes received so far. */
  readonly bytesReceived: number;
  /** Ping frames received (each answered with a pong). */
  readonly pingsReceived: number;
  /** Writes one masked frame with `opcode` (0x1 text, 0x2 binary, ...) and `payload`. */
  rawWrite(opcode: number, payload: Buffer): void;
  /** Sends `frames` as JSON text frames in one TCP write (the server reads them in one go). */
  sendTogether(frames: unknown[]): void;
}

/**
 * Sends `GET path` with the WebSocket upgrade headers plus `headers` over a raw TCP connection to
 * 127.0.0.1:`port`, and reads the response head. On 101 it returns a client that reads frames (answering
 * pings) and can pause reading; otherwise the status, headers and body of the refusal.
 */
export function rawUpgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<RawUpgrade> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: '127.0.0.1', port });
    const key = randomBytes(16).toString('base64');
    let buf = Buffer.alloc(0);
    let head: { status: number; headers: Record<string, string> } | undefined;
    let settled = false;
    const timer = setTimeout(() => fail(new Error('no upgrade response within 10 s')), 10_000);
    const fail = (err: Error) => { if (!settled) { settled = true; clearTimeout(timer); sock.destroy(); reject(err); } };

    sock.on('connect', () => {
      const lines = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Upgrade: websocket', 'Connection: Upgrade',
        `Sec-WebSocket-Key: ${key}`, 'Sec-WebSocket-Version: 13', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      sock.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (head !== undefined) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...rest] = buf.subarray(0, end).toString('latin1').split('\r\n');
      const h: Record<string, string> = {};
      for (const l of rest) { const i = l.indexOf(':'); h[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim(); }
      head = { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0), headers: h };
      buf = buf.subarray(end + 4);
      if (head.status !== 101) {
        // Read the body of the refusal until the server closes or Content-Length is reached.
        const len = Number(h['content-length'] ?? NaN);
        const finish = () => { if (!settled) { settled = true; clearTimeout(timer); sock.destroy(); resolve({ ...head!, body: buf.toString('utf8'), socket: undefined }); } };
        if (Number.isFinite(len) && buf.length >= len) return finish();
        sock.on('end', finish);
        sock.on('close', finish);
        sock.on('data', () => { if (Number.isFinite(len) && buf.length >= len) finish(); });
        return;
      }
      settled = true;
      clearTimeout(timer);
      sock.off('data', onData);
      resolve({ ...head, body: '', socket: frameSocket(sock, buf) });
    };
    sock.on('data', onData);
    sock.on('error', (err) => fail(err));
  });
}

/** A client-side WebSocket over `sock` (RFC 6455 framing: masked client frames, unmasked server frames). */
function frameSocket(sock: Socket, initial: Buffer): RawSocket {
  const log = new FrameLog();
  let buf = initial;
  let received = initial.length;
  let resolveClosed!: (c: Closed) => void;
  const closed = new Promise<Closed>((r) => { resolveClosed = r; });
  let fragments: Buffer[] = [];
  let pings = 0;
  const end = (c: Closed) => { log.end(c); resolveClosed(c); };

  const write = (opcode: number, payload: Buffer) => {
    if (sock.destroyed) return;
    sock.write(encode(opcode, payload));
  };
  const encode = (opcode: number, payload: Buffer): Buffer => {
    const mask = randomBytes(4);
    const len = payload.length;
    const header = len < 126 ? Buffer.from([0x80 | opcode, 0x80 | len])
      : len < 65536 ? Buffer.from([0x80 | opcode, 0x80 | 126, len >> 8, len & 255])
        : Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(len)); return b; })()]);
    const masked = Buffer.alloc(len);
    for (let i = 0; i < len; i++) masked[i] = payload[i]! ^ mask[i % 4]!;
    return Buffer.concat([header, mask, masked]);
  };

  const parse = () => {
    for (;;) {
      if (buf.length < 2) return;
      const b0 = buf[0]!;
      const b1 = buf[1]!;
      let len = b1 & 0x7f;
      let off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      if (buf.length < off + len) return;
      const payload = buf.subarray(off, off + len);
      buf = buf.subarray(off + len);
      const opcode = b0 & 0x0f;
      const fin = (b0 & 0x80) !== 0;
      if (opcode === 0x8) {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        end({ code, reason: payload.subarray(2).toString('utf8') });
        write(0x8, payload.subarray(0, 2));
        sock.end();
        return;
      }
      if (opcode === 0x9) { pings++; write(0xa, Buffer.from(payload)); continue; }
      if (opcode === 0xa) continue;
      fragments.push(Buffer.from(payload));
      if (fin) {
        const text = Buffer.concat(fragments).toString('utf8');
        fragments = [];
        log.push(text);
      }
    }
  };
  sock.on('data', (d: Buffer) => { received += d.length; buf = Buffer.concat([buf, d]); parse(); });
  sock.on('close', () => end({ code: 1006, reason: '' }));
  sock.on('error', () => end({ code: 1006, reason: '' }));
  queueMicrotask(parse);

  return {
    frames: log.frames,
    send: (f) => write(0x1, Buffer.from(typeof f === 'string' ? f : JSON.stringify(f), 'utf8')),
    rawWrite: write,
    sendTogether: (frames) => {
      if (sock.destroyed) return;
      sock.write(Buffer.concat(frames.map((f) => encode(0x1, Buffer.from(typeof f === 'string' ? f : JSON.stringify(f), 'utf8')))));
    },
    next: async (match = any, timeoutMs = 10_000, what = 'a frame') => (await log.until(match, timeoutMs, what)).at(-1)!,
    until: (match, timeoutMs = 10_000, what = 'a frame') => log.until(match, timeoutMs, what),
    closed,
    close: () => { const p = Buffer.alloc(2); p.writeUInt16BE(1000); write(0x8, p); },
    drop: () => sock.destroy(),
    pause: () => sock.pause(),
    resume: () => sock.resume(),
    get bytesReceived() { return received; },
    get pingsReceived() { return pings; },
  };
}
