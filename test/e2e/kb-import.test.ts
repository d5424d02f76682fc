/**
 * `npm run parley -- kb import <folder> --kb <kb_id|name> [--org] [--create]` (the compiled CLI) on the
 * data directory of a running server: the project's docs/ imported with a progress bar and a summary,
 * searchable through the server at once; a folder with broken files exits 1 and lists each failure with
 * its reason while the good files are imported; usage errors exit 2.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, randomBytes, zipOf } from '../helpers/broken-files.js';
import { startMockUpstream } from '../helpers/mock-upstream.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/src/cli/main.js');
const DOCS = join(ROOT, 'docs');

let srv: TestServer;
let scratch: string;
beforeAll(async () => {
  srv = await startTestServer();
  scratch = mkdtempSync(join(tmpdir(), 'parley-import-'));
});
afterAll(async () => {
  await srv?.close();
  rmSync(scratch, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PARLEY_DATA_DIR: srv.dataDir, PARLEY_LOG_LEVEL: 'silent', ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      done({ code: err ? (err as { code?: number }).code ?? 1 : 0, stdout, stderr });
    });
  });
}

describe('kb import', () => {
  let kbId: string;

  it('imports docs/ into a new knowledge base with progress and a summary; the server finds the pages', async () => {
    const pages = readdirSync(DOCS).filter((f) => f.endsWith('.md'));
    expect(pages.length).toBeGreaterThan(5);
    const run = await cli(['kb', 'import', DOCS, '--kb', 'Project docs', '--org', srv.orgId, '--create']);
    expect(run.code, run.stderr).toBe(0);
    const created = new RegExp(`^Importing ${pages.length} documents from ${DOCS} into (kb_\\w+) "Project docs" \\(created\\)\\.$`, 'm').exec(run.stdout);
    expect(created, run.stdout).not.toBeNull();
    kbId = created![1]!;
    expect(run.stdout).toMatch(new RegExp(`^Done in [\\d.]+ s: ${pages.length} ready, 0 failed, [\\d.]+ MB at [\\d.]+ MB/s\\.$`, 'm'));
    expect(run.stdout).toMatch(/^Skipped \d+ files? of other types: .*images\/dashboard\.png/m);
    expect(run.stdout).not.toContain('Failed:');
    // The progress bar: documents done / total, MB/s and failures; it ends at total / total.
    expect(run.stderr).toMatch(new RegExp(`Ingesting \\[=+\\] ${pages.length}/${pages.length} documents \\| [\\d.]+ MB/s \\| 0 failed`));

    const docs = await (await srv.api(`/v1/knowledge-bases/${kbId}/documents?limit=100`)).json() as { data: Array<{ title: string; status: string }> };
    expect(docs.data).toHaveLength(pages.length);
    expect(docs.data.every((d) => d.status === 'ready')).toBe(true);
    expect(docs.data.map((d) => d.title)).toEqual(expect.arrayContaining(['Knowledge bases', 'Getting started']));
    const hits = await (await srv.api(`/v1/knowledge-bases/${kbId}/search?q=${encodeURIComponent('PARLEY_INGEST_WORKERS')}&k=3`)).json() as { data: unknown[] };
    expect(hits.data.length).toBeGreaterThan(0);
  }, 180_000);

  it('a folder with broken files: exit 1, each failure listed with its reason, the good files imported (base found by name)', async () => {
    const folder = join(scratch, 'mixed');
    const nested = join(folder, 'manuals');
    mkdirSync(nested, { recursive: true });
    copyFileSync(join(FIXTURES, 'operations.pdf'), join(nested, 'operations.pdf'));
    writeFileSync(join(folder, 'parking.md'), '# Parking\n\nVisitors park for free in the north garage after six.\n');
    writeFileSync(join(folder, 'truncated.pdf'), Buffer.from(randomBytes(3000)));
    writeFileSync(join(folder, 'not-word.docx'), zipOf({ 'readme.txt': 'just a zip' }));
    writeFileSync(join(folder, 'empty.txt'), '');

    const run = await cli(['kb', 'import', folder, '--kb', 'Project docs']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toMatch(/^Done in [\d.]+ s: 2 ready, 3 failed, /m);
    const failures = run.stdout.slice(run.stdout.indexOf('Failed:\n')).split('\n').slice(1).filter((l) => l.length > 0).sort();
    expect(failures).toEqual([
      '  empty.txt: document is empty',
      expect.stringMatching(/^ {2}not-word\.docx: document is not a valid DOCX file: /),
      '  truncated.pdf: document is not a valid PDF (corrupt or truncated)',
    ]);
    expect(run.stderr).toMatch(/5\/5 documents \| [\d.]+ MB\/s \| 3 failed/);

    const search = async (q: string) => (await (await srv.api(`/v1/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}&k=1`)).json() as { data: Array<{ title: string; page: number | null }> }).data;
    expect((await search('north garage'))[0]).toMatchObject({ title: 'Parking' });
    expect((await search('SIGTERM drains'))[0]).toMatchObject({ title: 'Operations', page: 2 });
  }, 180_000);

  it('usage errors exit 2: unknown base without --create, --create without --org, no folder, a missing folder', async () => {
    const unknown = await cli(['kb', 'import', DOCS, '--kb', 'No such base']);
    expect(unknown).toMatchObject({ code: 2, stderr: 'No knowledge base "No such base". Pass --create (with --org) to create it.\n' });
    const noOrg = await cli(['kb', 'import', DOCS, '--kb', 'Another', '--create']);
    expect(noOrg).toMatchObject({ code: 2, stderr: '--create needs --org <org_id>: the organization the new knowledge base belongs to.\n' });
    const noFolder = await cli(['kb', 'import', '--kb', 'Project docs']);
    expect(noFolder.code).toBe(2);
    expect(noFolder.stderr).toContain('Expected <folder>, got 0 arguments.');
    const missing = await cli(['kb', 'import', join(scratch, 'nope'), '--kb', 'Project docs']);
    expect(missing).toMatchObject({ code: 2, stderr: `${join(scratch, 'nope')} is not a folder.\n` });
  }, 60_000);
});

describe('kb import with embeddings', () => {
  it('embeds the chunks it imports (PARLEY_EMBEDDINGS_*); a document that cannot be embedded fails with the reason', async () => {
    const mock = await startMockUpstream();
    try {
      const folder = join(scratch, 'embedded');
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'garage.md'), '# Garage\n\nAutomobile maintenance happens every twelve months at the garage.\n');
      writeFileSync(join(folder, 'bakery.md'), '# Bakery\n\nSourdough loaves are baked each morning with wild yeast.\n');
      const env = { PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_EMBEDDINGS_MODEL: 'mock-embed', PARLEY_EMBEDDINGS_BATCH: '8' };
      const run = await cli(['kb', 'import', folder, '--kb', 'Embedded', '--org', srv.orgId, '--create'], env);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^Done in [\d.]+ s: 2 ready, 0 failed, /m);
      // One chunk per document, one request per document (batches never mix documents).
      expect(mock.embeddingRequests.map((r) => [r.body.model, r.inputs.length, r.status])).toEqual([['mock-embed', 1, 200], ['mock-embed', 1, 200]]);
      const db = (srv.parley.store as unknown as { db: import('better-sqlite3').Database }).db;
      const rows = db.prepare(`SELECT c.embedding_model AS model, length(c.embedding) AS bytes FROM chunks c JOIN documents d ON d.id = c.doc_id
        JOIN knowledge_bases k ON k.id = d.kb_id WHERE k.name = 'Embedded'`).all();
      expect(rows).toEqual([{ model: 'mock-embed', bytes: 256 }, { model: 'mock-embed', bytes: 256 }]);

      mock.reset();
      mock.failEmbeddings(Number.POSITIVE_INFINITY, 401);
      writeFileSync(join(folder, 'garden.md'), '# Garden\n\nTomatoes need sunlight.\n');
      const failed = await cli(['kb', 'import', join(folder), '--kb', 'Embedded again', '--org', srv.orgId, '--create'], env);
      expect(failed.code, failed.stderr).toBe(1);
      expect(failed.stdout).toMatch(/^Done in [\d.]+ s: 0 ready, 3 failed, /m);
      expect(failed.stdout).toContain('  garden.md: embedding failed: embeddings upstream returned HTTP 401: mock embeddings failure');
      // A 401 is not retried: one request per document.
      expect(mock.embeddingRequests).toHaveLength(3);
    } finally {
      await mock.close();
    }
  }, 120_000);
});
