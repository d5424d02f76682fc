/**
 * The floor: the least a relay built on Parley's own libraries can do, to show how much of Parley's cost
 * is Parley. uWebSockets.js in front, one undici keep-alive `Pool` to the upstream (the `dispatch` API:
 * no Readable, no async iterator), eventsource-parser on the upstream's SSE. No auth, no store, no
 * actors, no backpressure handling (uWS buffers what the socket does not take at once).
 *
 * `POST /v1/agents/<model>/chat` with `{"message", "stream"}`: the agent id IS the upstream model name
 * (there is no agent store). `stream: true` answers Parley-shaped SSE: `data: {"type":"conversation",...}`
 * at once, one `data: {"type":"token","delta":...}` per upstream content delta (the frames of one upstream
 * read written in one corked write), then `data: {"type":"done","finish_reason":...}`; a client that
 * leaves aborts the upstream request. `stream: false` answers `{conversation_id, content}` once the
 * upstream stream ended. `GET /metrics`: event-loop delay since the previous scrape (bench/lib/loop-monitor.ts).
 *
 * CLI: `node dist/bench/floor/server.js --port 0 --upstream <base url> [--connections 4096]`; prints
 * `{"url","port"}` once listening.
 */
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import type * as UwsTypes from 'uWebSockets.js';
import { Pool, type Dispatcher } from 'undici';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { startLoopMonitor } from '../lib/loop-monitor.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    upstream: { type: 'string' },
    connections: { type: 'string', default: '4096' },
  },
  strict: true,
});
if (!values.upstream) throw new Error('--upstream <OpenAI-compatible base URL> is required');
const base = new URL(values.upstream);
const completionsPath = `${base.pathname.replace(/\/+$/, '')}/chat/completions`;

const require = createRequire(import.meta.url);
const uws = require('uWebSockets.js') as typeof UwsTypes;
if (!String(uws.App).includes('[native code]')) throw new Error('uWebSockets.js fell back to its JavaScript emulation; the floor needs the native build (Node 20)');

/** Same cap as Parley's default PARLEY_OPENAI_CONNECTIONS, so both hold the same number of upstream sockets. */
const pool = new Pool(base.origin, { connections: Number(values.connections), pipelining: 1, keepAliveTimeout: 60_000 });
const loopMetrics = startLoopMonitor(1);
let conversations = 0;

/** One relayed turn: the upstream handler and the client response it writes to. */
class Relay implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private readonly parser: EventSourceParser;
  private readonly utf8 = new TextDecoder();
  private out = '';
  private content = '';
  private finish = 'stop';
  private status = 0;
  gone = false;

  constructor(private readonly res: UwsTypes.HttpResponse, private readonly conversationId: string, private readonly stream: boolean) {
    this.parser = createParser({ onEvent: (ev) => this.onEvent(ev.data) });
  }

  leave(): void {
    this.gone = true;
    this.controller?.abort(new Error('client left'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.gone) controller.abort(new Error('client left'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number): void {
    this.status = statusCode;
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.gone || this.status !== 200) return;
    this.parser.feed(this.utf8.decode(chunk, { stream: true }));
    if (this.out !== '') {
      const out = this.out;
      this.out = '';
      this.res.cork(() => this.res.write(out));
    }
  }

  onResponseEnd(): void {
    if (this.gone) return;
    if (this.status !== 200) return this.fail(`upstream answered ${this.status}`);
    this.gone = true;
    this.res.cork(() => {
      if (this.stream) this.res.end(`data: {"type":"done","finish_reason":${JSON.stringify(this.finish)}}\n\n`);
      else this.res.writeHeader('Content-Type', 'application/json').end(JSON.stringify({ conversation_id: this.conversationId, content: this.content }));
    });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (!this.gone) this.fail(err.message);
  }

  private onEvent(data: string): void {
    if (data === '[DONE]') return;
    let chunk: { choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[] };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      return;
    }
    const choice = chunk.choices?.[0];
    const delta = choice?.delta?.content;
    if (typeof delta === 'string' && delta !== '') {
      if (this.stream) this.out += `data: {"type":"token","delta":${JSON.stringify(delta)}}\n\n`;
      else this.content += delta;
    }
    if (choice?.finish_reason) this.finish = choice.finish_reason;
  }

  private fail(message: string): void {
    this.gone = true;
    const error = { code: 'model_unavailable', message };
    this.res.cork(() => {
      if (this.stream) this.res.end(`data: ${JSON.stringify({ type: 'error', error })}\n\n`);
      else this.res.writeStatus('502 Bad Gateway').writeHeader('Content-Type', 'application/json').end(JSON.stringify({ error }));
    });
  }
}

function badRequest(res: UwsTypes.HttpResponse, code: string): void {
  res.cork(() => res.writeStatus('400 Bad Request').writeHeader('Content-Type', 'application/json').end(JSON.stringify({ error: { code } })));
}

function startTurn(res: UwsTypes.HttpResponse, model: string, raw: string, state: { relay?: Relay; aborted: boolean }): void {
  let body: { message?: unknown; stream?: unknown };
  try {
    body = JSON.parse(raw) as typeof body;
  } catch {
    return badRequest(res, 'invalid_json');
  }
  if (typeof body.message !== 'string' || body.message === '') return badRequest(res, 'validation_failed');
  const stream = body.stream === true;
  const conversationId = `conv_${(++conversations).toString(36)}`;
  const relay = new Relay(res, conversationId, stream);
  state.relay = relay;
  if (stream) {
    res.cork(() => {
      res.writeHeader('Content-Type', 'text/event-stream; charset=utf-8').writeHeader('Cache-Control', 'no-cache');
      res.write(`data: {"type":"conversation","conversation_id":"${conversationId}"}\n\n`);
    });
  }
  const upstreamBody = JSON.stringify({
    model, messages: [{ role: 'user', content: body.message }], stream: true, stream_options: { include_usage: true },
  });
  pool.dispatch({ method: 'POST', path: completionsPath, headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: upstreamBody }, relay);
}

const app = uws.App();
app.post('/v1/agents/:model/chat', (res, req) => {
  const model = decodeURIComponent(req.getParameter(0));
  const state: { relay?: Relay; aborted: boolean } = { aborted: false };
  res.onAborted(() => {
    state.aborted = true;
    state.relay?.leave();
  });
  // uWS reuses the chunk's memory after the callback: copy partial chunks, decode once at the end.
  const parts: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    size += chunk.byteLength;
    if (size > 1024 * 1024) {
      if (!state.aborted) res.close();
      state.aborted = true;
      return;
    }
    if (!isLast) {
      parts.push(Buffer.from(chunk.slice(0)));
      return;
    }
    if (state.aborted) return;
    const raw = parts.length === 0 ? Buffer.from(chunk).toString('utf8') : Buffer.concat([...parts, Buffer.from(chunk)]).toString('utf8');
    startTurn(res, model, raw, state);
  });
});
app.get('/metrics', (res) => {
  res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(loopMetrics());
});
app.get('/healthz', (res) => {
  res.writeHeader('Content-Type', 'application/json').end('{"ok":true}');
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').writeHeader('Content-Type', 'application/json').end('{"error":{"code":"not_found"}}');
});

let listenSocket: UwsTypes.us_listen_socket | undefined;
app.listen(values.host, Number(values.port), (token) => {
  if (!token) {
    process.stderr.write(`floor: cannot listen on ${values.host}:${values.port}\n`);
    process.exit(1);
  }
  listenSocket = token;
  const port = uws.us_socket_local_port(token);
  process.stdout.write(`${JSON.stringify({ url: `http://${values.host}:${port}`, port })}\n`);
});

const stop = () => {
  if (listenSocket) uws.us_listen_socket_close(listenSocket);
  void pool.destroy().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
