/**
 * The baseline: what a team would otherwise build in an afternoon. A hand-rolled relay on node:http:
 * authenticates `Authorization: Bearer <key>` by SHA-256 lookup in SQLite, stores the visitor turn and
 * the reply in SQLite (better-sqlite3, WAL), and relays an OpenAI-compatible stream through the
 * `openai` SDK as Server-Sent Events: `data: {"type":"conversation",...}` first, then
 * `data: {"type":"token","delta":...}` per delta and `data: {"type":"done"}` (or an `error` event).
 *
 * `POST /v1/chat` (also `/v1/agents/<any>/chat`) with `{"message", "stream"?, "model"?}`; `stream: false`
 * answers one JSON `{conversation_id, content}`. A client that goes away aborts the upstream call.
 * `GET /metrics`: event-loop delay since the previous scrape (bench/lib/loop-monitor.ts; bench
 * instrumentation, not part of what the team would build).
 *
 * CLI: `node dist/bench/baseline/server.js --port 0 --db <file> --upstream <base url> [--model bench]`,
 * key from `BASELINE_API_KEY` (stored hashed); prints `{"url","port"}` once listening.
 */
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { startLoopMonitor } from '../lib/loop-monitor.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    db: { type: 'string', default: 'baseline.db' },
    upstream: { type: 'string' },
    model: { type: 'string', default: 'bench' },
  },
  strict: true,
});
if (!values.upstream) throw new Error('--upstream <OpenAI-compatible base URL> is required');

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const db = new Database(values.db);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`
  CREATE TABLE IF NOT EXISTS api_keys (key_hash TEXT PRIMARY KEY, org_id TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, created_at TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, created_at TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, id);
`);
const seedKey = process.env.BASELINE_API_KEY;
if (seedKey) db.prepare('INSERT OR IGNORE INTO api_keys (key_hash, org_id) VALUES (?, ?)').run(sha256(seedKey), 'org_bench');

const findKey = db.prepare<[string], { org_id: string }>('SELECT org_id FROM api_keys WHERE key_hash = ?');
const insertConversation = db.prepare('INSERT INTO conversations (id, org_id, created_at) VALUES (?, ?, ?)');
const insertMessage = db.prepare('INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, ?, ?, ?)');
const startTurn = db.transaction((conversationId: string, orgId: string, text: string) => {
  const now = new Date().toISOString();
  insertConversation.run(conversationId, orgId, now);
  insertMessage.run(conversationId, 'visitor', text, now);
});

const loopMetrics = startLoopMonitor(1);
const openai = new OpenAI({ apiKey: 'bench', baseURL: values.upstream, maxRetries: 0, timeout: 600_000 });

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handleChat(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const m = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? '');
  const key = m ? findKey.get(sha256(m[1]!)) : undefined;
  if (!key) {
    req.resume();
    sendJson(res, 401, { error: { code: 'invalid_api_key' } });
    return;
  }
  let body: { message?: unknown; stream?: unknown; model?: unknown };
  try {
    body = JSON.parse(await readBody(req, 1024 * 1024)) as typeof body;
  } catch {
    sendJson(res, 400, { error: { code: 'invalid_json' } });
    return;
  }
  if (typeof body.message !== 'string' || body.message.length === 0) {
    sendJson(res, 400, { error: { code: 'validation_failed' } });
    return;
  }
  const message = body.message;
  const model = typeof body.model === 'string' ? body.model : values.model;
  const conversationId = randomUUID();
  startTurn(conversationId, key.org_id, message);
  const messages = [{ role: 'user' as const, content: message }];

  if (body.stream !== true) {
    try {
      const completion = await openai.chat.completions.create({ model, messages });
      const content = completion.choices[0]?.message.content ?? '';
      insertMessage.run(conversationId, 'agent', content, new Date().toISOString());
      sendJson(res, 200, { conversation_id: conversationId, content });
    } catch {
      sendJson(res, 502, { error: { code: 'model_unavailable' } });
    }
    return;
  }

  const abort = new AbortController();
  let finished = false;
  res.on('close', () => { if (!finished) abort.abort(); });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(`data: ${JSON.stringify({ type: 'conversation', conversation_id: conversationId })}\n\n`);
  let text = '';
  try {
    const stream = await openai.chat.completions.create({ model, messages, stream: true }, { signal: abort.signal });
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content;
      if (!delta) continue;
      text += delta;
      res.write(`data: ${JSON.stringify({ type: 'token', delta })}\n\n`);
    }
    insertMessage.run(conversationId, 'agent', text, new Date().toISOString());
    finished = true;
    res.end('data: {"type":"done"}\n\n');
  } catch (err) {
    finished = true;
    if (abort.signal.aborted) return; // the client went away
    insertMessage.run(conversationId, 'agent', text, new Date().toISOString());
    res.end(`data: ${JSON.stringify({ type: 'error', error: { code: 'model_unavailable', message: err instanceof Error ? err.message : String(err) } })}\n\n`);
  }
}

const server = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (req.method === 'POST' && (path === '/v1/chat' || /^\/v1\/agents\/[^/]+\/chat$/.test(path))) {
    handleChat(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: { code: 'internal_error' } });
      else res.destroy();
    });
    return;
  }
  if (req.method === 'GET' && path === '/metrics') {
    const text = loopMetrics();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  if (req.method === 'GET' && path === '/healthz') {
    sendJson(res, 200, { ok: true });
    return;
  }
  req.resume();
  sendJson(res, 404, { error: { code: 'not_found' } });
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
server.requestTimeout = 0;

server.listen(Number(values.port), values.host, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://${values.host}:${port}`, port })}\n`);
});
const stop = () => {
  server.close();
  server.closeAllConnections();
  db.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
