/**
 * Issue 35, finding 2: decompression bombs against a real server process (`node dist/src/main.js`),
 * uploaded over HTTP, with the server's resident memory read from /proc before and after. The bombs are
 * the review's, made here (test/helpers/bombs.ts): a 3.4 MB DOCX whose `word/document.xml` inflates to
 * 3.5 GB of one letter (its zip directory declaring 4 KB), and a 1.5 MB PDF whose FlateDecode content
 * stream inflates to 1.5 GB. Each must fail as `document_too_large` (status, `error_code`, `error`, and the
 * `document.failed` webhook), and the server's RSS must be within 256 MB of what it was before (the issue's
 * bound). Before the fix: +3.5 GB and +4 GB, kept, and the PDF was `ready`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docxBomb, pdfBomb } from '../helpers/bombs.js';
import { credentialsOf, startMain, type MainProcess } from '../helpers/main-process.js';
import { waitFor } from '../helpers/sse-client.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
/** The bound on the server's memory after a failed document, bytes. */
const RSS_BOUND = 256 * 1024 * 1024;

/** Resident memory of process `pid` (VmRSS of /proc/<pid>/status), bytes. */
function rssOf(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

const linux = process.platform === 'linux';
if (!linux) console.warn('skipped: reads resident memory from /proc');

describe.runIf(linux)('decompression bombs through a real server (issue 35, finding 2)', () => {
  let dir: string;
  let main: MainProcess;
  let receiver: Receiver;
  let headers: Record<string, string>;
  let kbId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-bombs-'));
    receiver = await startReceiver();
    main = await startMain(dir, { PARLEY_WEBHOOKS_ALLOW_PRIVATE: 'true', PARLEY_INGEST_WORKERS: '1' });
    const { api_key } = await credentialsOf(dir);
    headers = { authorization: `Bearer ${api_key}` };
    const json = { ...headers, 'content-type': 'application/json' };
    const hook = await fetch(`${main.url}/v1/webhooks`, { method: 'POST', headers: json, body: JSON.stringify({ url: `${receiver.url}/hooks`, events: ['document.failed'] }) });
    expect(hook.status).toBe(201);
    kbId = ((await (await fetch(`${main.url}/v1/knowledge-bases`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Bombs' }) })).json()) as { id: string }).id;
    // The first start ingests the demo knowledge base (docs/): let it finish, so the baseline is steady.
    const bases = ((await (await fetch(`${main.url}/v1/knowledge-bases`, { headers })).json()) as { data: Array<{ id: string }> }).data;
    await waitFor(async () => {
      for (const kb of bases) {
        const docs = ((await (await fetch(`${main.url}/v1/knowledge-bases/${kb.id}/documents?limit=100`, { headers })).json()) as { data: Array<{ status: string }> }).data;
        if (docs.some((d) => d.status === 'processing')) return undefined;
      }
      return true;
    }, 60_000, 'the demo knowledge base ingested');
  }, 90_000);

  afterAll(async () => {
    main?.child.kill('SIGKILL');
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Uploads `file`, samples the server's RSS every 50 ms until the document leaves `processing`, and 1 s after. */
  async function uploadBomb(file: Uint8Array, contentType: string) {
    const pid = main.child.pid!;
    const before = rssOf(pid);
    let peak = before;
    const res = await fetch(`${main.url}/v1/knowledge-bases/${kbId}/documents?title=bomb`, { method: 'POST', headers: { ...headers, 'content-type': contentType }, body: file });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const doc = await waitFor(async () => {
      peak = Math.max(peak, rssOf(pid));
      const d = (await (await fetch(`${main.url}/v1/knowledge-bases/${kbId}/documents/${id}`, { headers })).json()) as { status: string; error: string | null; error_code: string | null };
      return d.status === 'processing' ? undefined : d;
    }, 100_000, 'the bomb document to finish');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = rssOf(pid);
    console.log(`${contentType}: ${(file.byteLength / 1e6).toFixed(1)} MB upload; server RSS ${(before / 2 ** 20).toFixed(0)} MB before, peak ${(peak / 2 ** 20).toFixed(0)} MB, ${(after / 2 ** 20).toFixed(0)} MB after`);
    return { id, doc, before, peak, after };
  }

  it('a 3.4 MB DOCX whose document.xml inflates to 3.5 GB fails as document_too_large; the server stays within 256 MB of its memory', async () => {
    const bomb = docxBomb(209);
    expect(bomb.expandedBytes).toBeGreaterThan(3.5e9);
    expect(bomb.file.byteLength).toBeLessThan(3.5e6);
    const { id, doc, before, peak, after } = await uploadBomb(bomb.file, DOCX);
    expect(after - before).toBeLessThan(RSS_BOUND);
    expect(peak - before).toBeLessThan(RSS_BOUND);
    expect(doc).toMatchObject({ status: 'failed', error_code: 'document_too_large', error: 'document expands to more than 134217728 decompressed bytes (the ingestion expansion limit)' });
    const [event] = await receiver.waitFor((got) => got.some((r) => r.json.data.document_id === id), 20_000);
    expect(receiver.got.find((r) => r.json.data.document_id === id)?.json).toMatchObject({
      type: 'document.failed', data: { document_id: id, knowledge_base_id: kbId, error_code: 'document_too_large', error: doc.error },
    });
    expect(event).toBeDefined();
  }, 150_000);

  it('a 1.5 MB PDF whose FlateDecode content stream inflates to 1.5 GB fails as document_too_large (it was ready); the server stays within 256 MB', async () => {
    const bomb = await pdfBomb(90);
    expect(bomb.expandedBytes).toBeGreaterThan(1.5e9);
    expect(bomb.file.byteLength).toBeLessThan(1.6e6);
    const { id, doc, before, peak, after } = await uploadBomb(bomb.file, 'application/pdf');
    expect(after - before).toBeLessThan(RSS_BOUND);
    expect(peak - before).toBeLessThan(RSS_BOUND);
    expect(doc).toMatchObject({ status: 'failed', error_code: 'document_too_large', error: 'document expands to more than 134217728 decompressed bytes (the ingestion expansion limit)' });
    await receiver.waitFor((got) => got.some((r) => r.json.data.document_id === id), 20_000);
    expect(receiver.got.find((r) => r.json.data.document_id === id)?.json).toMatchObject({
      type: 'document.failed', data: { document_id: id, error_code: 'document_too_large' },
    });
  }, 150_000);

  it('a small DOCX and PDF of the same kind, under the limit, still become ready', async () => {
    const upload = async (file: Uint8Array, contentType: string) => {
      const res = await fetch(`${main.url}/v1/knowledge-bases/${kbId}/documents?title=small`, { method: 'POST', headers: { ...headers, 'content-type': contentType }, body: file });
      const { id } = (await res.json()) as { id: string };
      return waitFor(async () => {
        const d = (await (await fetch(`${main.url}/v1/knowledge-bases/${kbId}/documents/${id}`, { headers })).json()) as { status: string; error_code: string | null; chunk_count: number };
        return d.status === 'processing' ? undefined : d;
      }, 30_000, 'the small document');
    };
    // One 16 MiB run: a real expansion (about 1000:1), well under the 128 MiB limit; this zip declares its true size.
    expect(await upload(docxBomb(1, docxBomb(1).expandedBytes).file, DOCX)).toMatchObject({ status: 'ready', error_code: null, chunk_count: expect.any(Number) });
    expect(await upload((await pdfBomb(1)).file, 'application/pdf')).toMatchObject({ status: 'ready', error_code: null, chunk_count: 1 });
  }, 60_000);
});
