/**
 * The SQLite writer's commits by `synchronous` level, as the store counts them and /metrics shows them
 * (`parley_sqlite_commits_total`): acknowledged writes (a conversation and its first message, a document's
 * upload, its `ready`) commit at FULL, the writes nobody is told about (chunk slices, index merges) at
 * NORMAL (src/store/sqlite/knowledge-writes.ts `batchSynchronous`). The writer thread reads the level back
 * from SQLite for every batch, so these tests fail if the switch is dropped, never reaches the connection,
 * or leaves it at NORMAL: the bug of cc1ef03, whose PRAGMA statements, prepared at start, put the
 * connection at NORMAL for every chat commit (21 fsyncs for 200 acknowledged commits under strace, against
 * 221 now). Real writer thread, real SQLite files.
 */
import { describe, it, expect, afterAll, onTestFinished } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ConversationRecord, DocumentRecord, MessageRecord, NewChunk } from '../../src/store/records.js';
import { labelled } from '../helpers/metrics.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:00:01.000Z';

/** A SQLite store in a new temporary directory, closed and removed when the test ends. */
function store(opts: Parameters<typeof createSqliteStore>[1] = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'parley-commits-'));
  const s = createSqliteStore(dir, opts);
  onTestFinished(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return s;
}

const doc = (id: string): DocumentRecord => ({
  id, org_id: 'org_A', knowledge_base_id: 'kb_1', title: 'Big', content_type: 'text/plain', status: 'processing',
  error: null, error_code: null, chunk_count: 0, bytes: 3, created_at: T0, updated_at: T0,
});
const chunks = (n: number): NewChunk[] => Array.from({ length: n }, (_, i) => ({ ord: i, heading: '', text: `platypus passage number ${i}` }));
const conversation = (id: string): ConversationRecord => ({
  id, org_id: 'org_A', agent_id: 'agt_1', status: 'active', metadata: {}, visitor_token_hash: null, created_at: T0, updated_at: T0,
});
const message = (id: string, conv: string): MessageRecord => ({
  id, conversation_id: conv, org_id: 'org_A', turn_id: 'turn_1', role: 'visitor', content: 'Hello', citations: [], tool_runs: [],
  usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: T1,
});

/** Ingests 150 chunks (3 slices of 64 at most) into a new document of `s`; returns the commits it added. */
async function ingest(s: ReturnType<typeof store>): Promise<{ full: number; normal: number }> {
  await s.knowledge.createBase({ id: 'kb_1', org_id: 'org_A', name: 'kb', created_at: T0 });
  const before = s.commits!();
  await s.knowledge.createDocument(doc('doc_1'), 'raw');
  expect(await s.knowledge.completeDocument('doc_1', chunks(150), T1)).toBe(true);
  const after = s.commits!();
  return { full: after.full - before.full, normal: after.normal - before.normal };
}

describe('sqlite: commits by synchronous level (writer thread)', () => {
  it('commits a conversation and its first message at FULL, nothing at NORMAL', async () => {
    const s = store();
    expect(s.commits!()).toEqual({ full: 0, normal: 0 });
    await s.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1'));
    expect(s.commits!()).toEqual({ full: 1, normal: 0 });
  });

  it('commits chunk slices at NORMAL and the upload and the ready document at FULL', async () => {
    const s = store();
    const added = await ingest(s);
    // createDocument and chunksReady are acknowledged: at least those two FULL commits.
    expect(added.full).toBeGreaterThanOrEqual(2);
    // chunksPrepare and three slices, each awaited before the next is sent: at least three NORMAL commits.
    expect(added.normal).toBeGreaterThanOrEqual(3);
    expect((await s.knowledge.search('org_A', ['kb_1'], 'platypus', 200)).length).toBe(150);
    // Back to FULL for the next acknowledged write, after the switches to NORMAL and back.
    const before = s.commits!();
    await s.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1'));
    expect(s.commits!()).toEqual({ full: before.full + 1, normal: before.normal });
  });

  it('with PARLEY_SQLITE_SYNCHRONOUS=normal every commit is NORMAL', async () => {
    const s = store({ sync: 'NORMAL' });
    await s.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1'));
    const added = await ingest(s);
    expect(s.commits!().full).toBe(0);
    expect(added.normal).toBeGreaterThanOrEqual(5);
  });

  it('the main-thread writer counts its group commits at the configured level', async () => {
    const s = store({ writer: 'main' });
    await s.conversations.start(conversation('conv_1'), message('msg_1', 'conv_1'));
    await s.conversations.start(conversation('conv_2'), message('msg_2', 'conv_2'));
    expect(s.commits!()).toEqual({ full: 2, normal: 0 });
  });
});

/** strace, where this machine has it: the fsync test counts real system calls with it. */
const STRACE = ['/usr/bin/strace', '/bin/strace'].find((p) => existsSync(p));

describe('sqlite: acknowledged writes reach the disk', () => {
  // Independent of how the writer thread tracks its level: the kernel's count of fsync calls.
  it.skipIf(STRACE === undefined)('200 chat commits at the default FULL make at least 200 fsyncs (strace; skipped without strace)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-fsync-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const script = join(dirname(fileURLToPath(import.meta.url)), '../helpers/commit-fsyncs.mjs');
    const run = spawnSync(STRACE!, ['-f', '-c', '-e', 'trace=fsync,fdatasync', process.execPath, script, dir, '200'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(0);
    // strace -c prints a table on stderr: "% time  seconds  usecs/call  calls  errors syscall".
    const calls = [...run.stderr.matchAll(/^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)\s*$/gm)]
      .reduce((n, m) => n + Number(m[1]), 0);
    expect(calls).toBeGreaterThanOrEqual(200);
  });
});

describe('parley_sqlite_commits_total on /metrics', () => {
  const servers: TestServer[] = [];
  afterAll(async () => { await Promise.all(servers.map((s) => s.close())); });

  const commits = (url: string) => labelled(url, 'parley_sqlite_commits_total', 'synchronous');

  it('counts the FULL commits of an upload and the NORMAL ones of its chunks', async () => {
    const srv = await startTestServer();
    servers.push(srv);
    const kb = ((await (await srv.api('/v1/knowledge-bases', { body: { name: 'Commits' } })).json()) as { id: string }).id;
    const before = await commits(srv.url);
    expect(Object.keys(before).sort()).toEqual(['full', 'normal']);
    const body = Array.from({ length: 80 }, (_, i) => `## Part ${i}\n\nThe echidna lays eggs in part ${i}, which is why it is a monotreme.\n`).join('\n');
    const res = await fetch(`${srv.url}/v1/knowledge-bases/${kb}/documents?title=Echidna`, {
      method: 'POST', headers: { authorization: `Bearer ${srv.apiKey}`, 'content-type': 'text/markdown' }, body,
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { id: string }).id;
    const deadline = Date.now() + 30_000;
    let status = 'processing';
    while (status === 'processing' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      status = ((await (await srv.api(`/v1/knowledge-bases/${kb}/documents/${id}`)).json()) as { status: string }).status;
    }
    expect(status).toBe('ready');
    const after = await commits(srv.url);
    expect(after.full! - before.full!).toBeGreaterThanOrEqual(2);
    expect(after.normal! - before.normal!).toBeGreaterThanOrEqual(2);
  });
});
