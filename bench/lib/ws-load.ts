/**
 * The load generator's WebSocket jobs (run inside bench/lib/loadgen.ts, the client process; the `ws`
 * package is the client, without permessage-deflate, as Parley's server offers none):
 * - `ws-streams`: paced chat turns over `WS /v1/agents/{agent_id}/chat/ws`, the socket twin of the SSE
 *   `streams` job (same slots, ramp, stall and gap definitions).
 * - `ws-open` / `ws-check` / `ws-close`: idle authenticated sockets held open (connections): a socket
 *   counts as live when the server answered its `{"type":"ping"}` with `pong`, i.e. after the upgrade
 *   was authenticated and the session runs.
 * - `push-listen` / `push-run` / `push-close`: listening sockets (listen-only public sockets) and timed
 *   operator messages (`POST /v1/conversations/{id}/messages`): for each push, the time from the POST
 *   being issued to its `token` frame (role operator) arriving on every listener of that conversation.
 * Frames are classified by byte markers (ws-frames.ts); only operator token frames are parsed.
 */
import http from 'node:http';
import WebSocket from 'ws';
import type { Errors, StreamsResult } from './loadgen.js';
import { scrapeWindow } from './scrape.js';
import { Samples, type Summary } from './stats.js';
import { frameKind, isOverloadedFrame, TokenClock } from './ws-frames.js';
import { isClientLimit } from './raw-client.js';

/** A WebSocket endpoint and what to send on it. */
export interface WsTargetSpec {
  name: string;
  /** ws://127.0.0.1:<port><path> */
  url: string;
  /** Headers of the upgrade request (e.g. `Authorization: Bearer sk_...`). */
  headers: Record<string, string>;
  /** The client frame that starts a turn (JSON text). */
  message: string;
}

export type WsJob =
  | {
      type: 'ws-streams'; target: WsTargetSpec; port: number; slots: number; durationMs: number; rampMs: number; intervalMs: number;
      expectFirstMs: number; stallMs: number; drainMs: number; stallTimeoutMs: number;
      metrics?: { path: string; fromMs: number; toMs: number };
    }
  | { type: 'ws-open'; target: WsTargetSpec; count: number; concurrency: number; timeoutMs: number }
  | { type: 'ws-check' }
  | { type: 'ws-close' }
  | {
      type: 'push-listen'; port: number;
      /** One socket each: its path and the first frame it sends (the listen-only `auth` frame), under `conversationId`. */
      listeners: { conversationId: string; path: string; first?: string }[];
      concurrency: number; timeoutMs: number;
    }
  | {
      type: 'push-run'; port: number; apiKey: string;
      /** Each round posts one operator message to every conversation listed, at once; the rounds run one after another. */
      rounds: string[][];
      pauseMs: number; timeoutMs: number;
    }
  | { type: 'push-check' }
  | { type: 'push-close' };

/** `ws-open`: how many sockets went live, and the failures. */
export interface WsOpenResult { requested: number; live: number; errors: Errors; wallS: number; cpuS: number }

/** `push-listen`: sockets opened (upgrade completed) and the failures. */
export interface PushListenResult { requested: number; opened: number; errors: Errors; wallS: number }

/** `push-run`: times in ms from each POST being issued. */
export interface PushRunResult {
  pushes: number;
  /** Frames that should have arrived (sum over pushes of the open listeners of the conversation). */
  expected: number;
  arrived: number;
  /** Expected frames that had not arrived `timeoutMs` after their round started. */
  missed: number;
  /** POST -> the operator token frame on one listener, over every (push, listener). */
  perSocket: Summary;
  /** POST (or the round's first POST) -> the frame on the last listener of the round. */
  lastPerRound: Summary;
  /** POST -> its HTTP response (201). */
  post: Summary;
  errors: Errors;
  wallS: number;
  cpuS: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => performance.now();

function cpuNow(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function newErrors(): Errors {
  return { total: 0, server: 0, client: 0, byCode: {}, sample: '' };
}

function countError(e: Errors, code: string, clientLimit = false, sample = ''): void {
  e.total++;
  if (clientLimit) e.client++;
  else e.server++;
  e.byCode[code] = (e.byCode[code] ?? 0) + 1;
  if (!e.sample && sample) e.sample = `${code}: ${sample.slice(0, 200)}`;
}

const CLIENT_OPTIONS = { perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: 15_000 };

/** The end of one turn on a socket. */
interface TurnEnd { ok: boolean; error: string | undefined; refused: boolean; sample: string }

/**
 * One client socket: connects, then carries turns one at a time (a `message` frame, then frames until
 * `done` or `error`). `ready` resolves true once open, false when the connection failed.
 */
class WsConn {
  readonly ws: WebSocket;
  readonly ready: Promise<boolean>;
  closed = false;
  closeCode = 0;
  error = '';
  clientLimit = false;
  lastActivity = now();
  private turn: { clock: TokenClock; frames: number; finish: (e: TurnEnd) => void } | undefined;

  constructor(target: WsTargetSpec) {
    this.ws = new WebSocket(target.url, { ...CLIENT_OPTIONS, headers: target.headers });
    this.ready = new Promise<boolean>((resolve) => {
      this.ws.on('open', () => resolve(true));
      this.ws.on('error', (err) => {
        this.error = err.code ?? err.message;
        this.clientLimit = isClientLimit(err.code ?? '');
        resolve(false);
      });
      this.ws.on('unexpected-response', (_req, res) => {
        this.error = `http_${res.statusCode ?? 0}`;
        resolve(false);
        this.ws.terminate();
      });
      this.ws.on('close', (code) => {
        this.closed = true;
        this.closeCode = code;
        resolve(false);
        this.turn?.finish({ ok: false, error: `closed_${code}`, refused: false, sample: '' });
      });
    });
    this.ws.on('message', (data) => this.frame(data));
  }

  private frame(data: Buffer): void {
    const t = now();
    this.lastActivity = t;
    const turn = this.turn;
    if (turn === undefined) return;
    turn.frames++;
    const kind = frameKind(data);
    if (kind === 'token') turn.clock.token(t);
    else if (kind === 'done') turn.finish({ ok: true, error: undefined, refused: false, sample: '' });
    else if (kind === 'error') {
      const refused = isOverloadedFrame(data);
      turn.finish({ ok: false, error: refused ? 'refused_overloaded' : 'error_frame', refused, sample: data.toString('utf8') });
    }
  }

  /** Runs one turn; resolves with its clock, frame count and end. */
  runTurn(message: string, expectFirstMs: number, intervalMs: number, gaps: Samples): { clock: TokenClock; result: Promise<TurnEnd & { frames: number }>; fail(code: string): void } {
    const clock = new TokenClock(now(), expectFirstMs, intervalMs, gaps);
    let resolveEnd!: (e: TurnEnd & { frames: number }) => void;
    const result = new Promise<TurnEnd & { frames: number }>((r) => { resolveEnd = r; });
    const state = {
      clock, frames: 0,
      finish: (e: TurnEnd) => {
        if (this.turn !== state) return;
        this.turn = undefined;
        resolveEnd({ ...e, frames: state.frames });
      },
    };
    this.turn = state;
    this.lastActivity = now();
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) state.finish({ ok: false, error: 'socket_closed', refused: false, sample: '' });
    else this.ws.send(message);
    return { clock, result, fail: (code) => state.finish({ ok: false, error: code, refused: false, sample: '' }) };
  }

  get busy(): boolean {
    return this.turn !== undefined;
  }

  terminate(): void {
    this.ws.terminate();
  }
}

/** Opens `n` connections in batches of `batch` (each batch awaited, so no accept-queue overflow); the live ones. */
async function connectBatches(target: WsTargetSpec, n: number, batch: number, deadline: number): Promise<(WsConn | undefined)[]> {
  const out: (WsConn | undefined)[] = [];
  for (let i = 0; i < n && now() < deadline; i += batch) {
    const conns = Array.from({ length: Math.min(batch, n - i) }, () => new WsConn(target));
    const ok = await Promise.all(conns.map((c) => c.ready));
    conns.forEach((c, k) => {
      if (ok[k]) out.push(c);
      else { c.terminate(); out.push(undefined); }
    });
  }
  return out;
}

/**
 * `slots` concurrent paced streams, each on its own chat socket, back to back until `durationMs` (slot
 * starts spread over `rampMs`); the sockets are connected before the window. A stream stalls when its
 * largest silence exceeds `stallMs`; a turn that sees no frame for `stallTimeoutMs` fails (`timeout`) and
 * its socket is replaced. A typed refusal (`error` frame `overloaded`) waits 1 s before the next turn.
 */
export async function wsStreams(job: Extract<WsJob, { type: 'ws-streams' }>): Promise<StreamsResult> {
  const cpu0 = cpuNow();
  const gaps = new Samples(1 << 16);
  const maxGaps = new Samples(4096);
  const ttft = new Samples(4096);
  const errors = newErrors();
  let started = 0;
  let ok = 0;
  let stalled = 0;
  let tokens = 0;
  let frames = 0;
  let inflight = 0;
  let inflightSum = 0;
  let inflightN = 0;
  let inflightMax = 0;
  const gauge = setInterval(() => {
    inflightSum += inflight;
    inflightN++;
    if (inflight > inflightMax) inflightMax = inflight;
  }, 50);
  const pre = await connectBatches(job.target, job.slots, 100, now() + 60_000);
  const preconnected = pre.filter((c) => c !== undefined).length;
  const active = new Set<{ conn: WsConn; fail(code: string): void }>();
  const sweep = setInterval(() => {
    const t = now();
    for (const a of active) {
      if (t - a.conn.lastActivity > job.stallTimeoutMs) {
        a.fail('timeout');
        a.conn.terminate();
        active.delete(a);
      }
    }
  }, Math.min(250, Math.max(20, job.stallTimeoutMs / 4)));
  const start = now();
  const endAt = start + job.durationMs;
  const hardEnd = endAt + job.drainMs;
  const scrape = job.metrics ? scrapeWindow(job.port, job.metrics) : undefined;
  const slot = async (i: number) => {
    await sleep((job.rampMs * i) / job.slots);
    let c: WsConn | undefined = pre[i];
    for (let n = 0; n < 1_000_000 && now() < endAt; n++) {
      if (!c || c.closed) {
        c?.terminate();
        c = new WsConn(job.target);
        if (!(await c.ready)) {
          started++;
          countError(errors, c.error || 'connect_failed', c.clientLimit);
          c.terminate();
          c = undefined;
          await sleep(10);
          continue;
        }
      }
      started++;
      inflight++;
      const turn = c.runTurn(job.target.message, job.expectFirstMs, job.intervalMs, gaps);
      const handle = { conn: c, fail: turn.fail };
      active.add(handle);
      const r = await Promise.race([turn.result, sleep(Math.max(0, hardEnd - now())).then(() => undefined)]);
      active.delete(handle);
      inflight--;
      if (r === undefined) {
        turn.fail('drain_timeout');
        countError(errors, 'drain_timeout');
        break;
      }
      tokens += turn.clock.tokens;
      frames += r.frames;
      const maxGap = turn.clock.tokens > 0 ? turn.clock.maxGapMs : now() - turn.clock.t0;
      if (r.ok) {
        ok++;
        ttft.push(turn.clock.ttftMs);
        maxGaps.push(maxGap);
        if (maxGap > job.stallMs) stalled++;
      } else {
        countError(errors, r.error ?? 'unknown', false, r.sample);
        if (turn.clock.tokens > 0 && maxGap > job.stallMs) stalled++;
        await sleep(r.refused ? 1000 : 10);
      }
    }
    c?.terminate();
  };
  await Promise.all(Array.from({ length: job.slots }, (_, i) => slot(i)));
  clearInterval(sweep);
  clearInterval(gauge);
  const wallS = (now() - start) / 1000;
  const metrics = scrape ? await scrape : undefined;
  return {
    started, ok, errors, stalled, tokens, frames, preconnected,
    addedGap: gaps.summary(), maxGap: maxGaps.summary(), ttft: ttft.summary(),
    wallS, cpuS: cpuNow() - cpu0, inFlight: { mean: inflightN > 0 ? inflightSum / inflightN : 0, max: inflightMax },
    ...(metrics ?? {}),
  };
}

// ------------------------------------------------------------------------------------ idle sockets

/** Idle sockets held between ws-open and ws-close. */
const idle: { conn: WsConn; live: boolean }[] = [];
const PING = JSON.stringify({ type: 'ping' });

/**
 * Opens `count` sockets, at most `concurrency` handshakes at a time; each sends `{"type":"ping"}` once
 * open and is live when `pong` comes back. Resolves when all are live or failed, or after `timeoutMs`.
 */
export async function wsOpen(job: Extract<WsJob, { type: 'ws-open' }>): Promise<WsOpenResult> {
  const cpu0 = cpuNow();
  const start = now();
  const errors = newErrors();
  let live = 0;
  let next = 0;
  const deadline = start + job.timeoutMs;
  const one = async (): Promise<void> => {
    const c = new WsConn(job.target);
    const entry = { conn: c, live: false };
    idle.push(entry);
    if (!(await c.ready)) {
      countError(errors, c.error || `closed_${c.closeCode}`, c.clientLimit);
      return;
    }
    const pong = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), Math.max(1000, deadline - now()));
      c.ws.on('message', (data) => { if (frameKind(data) === 'pong') { clearTimeout(timer); resolve(true); } });
      c.ws.on('close', () => { clearTimeout(timer); resolve(false); });
      c.ws.send(PING);
    });
    if (pong) { entry.live = true; live++; } else countError(errors, c.closed ? `closed_${c.closeCode}` : 'no_pong');
  };
  const worker = async () => {
    while (next < job.count && now() < deadline) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(job.concurrency, job.count)) }, worker));
  return { requested: next, live, errors, wallS: (now() - start) / 1000, cpuS: cpuNow() - cpu0 };
}

/** Of the sockets that went live: how many are still open, and how many the server closed since. */
export function wsCheck(): { open: number; closedByServer: number } {
  let open = 0;
  let closed = 0;
  for (const e of idle) {
    if (!e.live) continue;
    if (e.conn.closed) closed++;
    else open++;
  }
  return { open, closedByServer: closed };
}

/** Drops every idle socket (TCP reset: the server sees them go at once). */
export async function wsClose(): Promise<{ closed: number }> {
  const n = idle.length;
  for (const e of idle) e.conn.terminate();
  idle.length = 0;
  await sleep(50);
  return { closed: n };
}

// ----------------------------------------------------------------------------------- operator push

/** A listening socket of push-listen. */
interface Listener { ws: WebSocket; conversationId: string; open: boolean }
const listeners: Listener[] = [];
/** Pushes waiting for their frames, by the pushed text. */
const waiting = new Map<string, { t0: number; conversationId: string; expected: number; arrived: number; lastAt: number; onArrive(ms: number): void }>();
const OPERATOR_TOKEN = Buffer.from('"role":"operator"', 'latin1');
const PUSH_PREFIX = 'bench push ';

function onListenerFrame(data: Buffer): void {
  const t = now();
  if (data.indexOf(OPERATOR_TOKEN) < 0 || frameKind(data) !== 'token') return;
  let delta: unknown;
  try {
    delta = (JSON.parse(data.toString('utf8')) as { delta?: unknown }).delta;
  } catch {
    return;
  }
  if (typeof delta !== 'string' || !delta.startsWith(PUSH_PREFIX)) return;
  const w = waiting.get(delta);
  if (w === undefined) return;
  w.arrived++;
  w.lastAt = t;
  w.onArrive(t - w.t0);
}

/**
 * Opens one socket per listener (at most `concurrency` handshakes at a time), sending its `first` frame
 * once open. Whether a socket is live (authenticated, joined) is only known when a push reaches it: the
 * benchmark's first push-run is the barrier.
 */
export async function pushListen(job: Extract<WsJob, { type: 'push-listen' }>): Promise<PushListenResult> {
  const start = now();
  const errors = newErrors();
  let opened = 0;
  let next = 0;
  const deadline = start + job.timeoutMs;
  const one = (spec: (typeof job.listeners)[number]) => new Promise<void>((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${job.port}${spec.path}`, CLIENT_OPTIONS);
    const l: Listener = { ws, conversationId: spec.conversationId, open: false };
    listeners.push(l);
    ws.on('open', () => {
      l.open = true;
      opened++;
      if (spec.first !== undefined) ws.send(spec.first);
      resolve();
    });
    ws.on('message', onListenerFrame);
    // One failure per socket: `error` and `unexpected-response` are followed by `close`.
    let failed = false;
    const fail = (code: string, clientLimit = false) => {
      if (!failed) countError(errors, code, clientLimit);
      failed = true;
      resolve();
    };
    ws.on('error', (err) => fail(err.code ?? err.message, isClientLimit(err.code ?? '')));
    ws.on('unexpected-response', (_req, res) => { fail(`http_${res.statusCode ?? 0}`); ws.terminate(); });
    ws.on('close', (code) => {
      if (l.open) l.open = false;
      else fail(`closed_${code}`);
    });
  });
  const worker = async () => {
    while (next < job.listeners.length && now() < deadline) await one(job.listeners[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(job.concurrency, job.listeners.length)) }, worker));
  return { requested: next, opened, errors, wallS: (now() - start) / 1000 };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** POST /v1/conversations/{id}/messages {content}; resolves with the status and ms to the response's end. */
function postMessage(port: number, apiKey: string, conversationId: string, content: string, t0: number): Promise<{ status: number; ms: number; body: string; error?: string }> {
  const body = JSON.stringify({ content });
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path: `/v1/conversations/${conversationId}/messages`, agent,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: now() - t0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', (err: Error & { code?: string }) => resolve({ status: 0, ms: now() - t0, body: '', error: err.code ?? err.message }));
    req.end(body);
  });
}

let pushSeq = 0;

/**
 * Runs the rounds: each round posts one operator message (`bench push <n>`, unique) to every listed
 * conversation at once, then waits until every open listener of those conversations got its `token`
 * frame, or `timeoutMs`; then `pauseMs`. Every latency counts from the moment its POST was issued to
 * the client's keep-alive pool (64 connections: in a burst, the wait for a free one is included, as an
 * operator console behind one HTTP/1.1 pool would see it).
 */
export async function pushRun(job: Extract<WsJob, { type: 'push-run' }>): Promise<PushRunResult> {
  const cpu0 = cpuNow();
  const start = now();
  const perSocket = new Samples(1 << 14);
  const lastPerRound = new Samples(1024);
  const post = new Samples(1024);
  const errors = newErrors();
  let pushes = 0;
  let expected = 0;
  let arrived = 0;
  const openBy = new Map<string, number>();
  for (const l of listeners) if (l.open) openBy.set(l.conversationId, (openBy.get(l.conversationId) ?? 0) + 1);
  for (const round of job.rounds) {
    const roundStart = now();
    let roundExpected = 0;
    let roundArrived = 0;
    let wake: () => void = () => {};
    const allIn = new Promise<void>((r) => { wake = r; });
    const texts: string[] = [];
    const posts = round.map((conversationId) => {
      const text = `${PUSH_PREFIX}${++pushSeq}`;
      texts.push(text);
      const n = openBy.get(conversationId) ?? 0;
      roundExpected += n;
      const t0 = now();
      waiting.set(text, {
        t0, conversationId, expected: n, arrived: 0, lastAt: 0,
        onArrive: (ms) => {
          perSocket.push(ms);
          roundArrived++;
          if (roundArrived >= roundExpected) wake();
        },
      });
      return postMessage(job.port, job.apiKey, conversationId, text, t0);
    });
    if (roundExpected === 0) wake();
    const answers = await Promise.all(posts);
    for (const a of answers) {
      pushes++;
      if (a.status === 201) post.push(a.ms);
      else countError(errors, a.error ?? `http_${a.status}`, isClientLimit(a.error ?? ''), a.body);
    }
    await Promise.race([allIn, sleep(Math.max(0, job.timeoutMs - (now() - roundStart)))]);
    let last = 0;
    for (const t of texts) {
      const w = waiting.get(t)!;
      if (w.lastAt > last) last = w.lastAt;
      waiting.delete(t);
    }
    expected += roundExpected;
    arrived += roundArrived;
    if (roundExpected > 0 && roundArrived === roundExpected) lastPerRound.push(last - roundStart);
    if (job.pauseMs > 0) await sleep(job.pauseMs);
  }
  return {
    pushes, expected, arrived, missed: expected - arrived,
    perSocket: perSocket.summary(), lastPerRound: lastPerRound.summary(), post: post.summary(), errors,
    wallS: (now() - start) / 1000, cpuS: cpuNow() - cpu0,
  };
}

/** How many listeners are still open (the server may have closed some: auth refused, too slow). */
export function pushCheck(): { open: number; total: number } {
  return { open: listeners.filter((l) => l.open).length, total: listeners.length };
}

/** Drops every listener. */
export async function pushClose(): Promise<{ closed: number }> {
  const n = listeners.length;
  for (const l of listeners) l.ws.terminate();
  listeners.length = 0;
  waiting.clear();
  await sleep(50);
  return { closed: n };
}

