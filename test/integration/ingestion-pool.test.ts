import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IngestionPool } from '../../src/knowledge/ingestion-pool.js';
import type { IngestResult, IngestTask } from '../../src/knowledge/types.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const workerFile = path.join(projectRoot, 'dist', 'src', 'knowledge', 'ingest.process.js');
const corpusDir = path.resolve(projectRoot, '../shared/corpus/nodejs-api');
const docsDir = path.join(projectRoot, 'docs');
const hasCorpus = existsSync(corpusDir);
if (!hasCorpus) console.warn('skipped: ../shared/corpus/nodejs-api not found');

function markdownFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => path.join(dir, name));
}

function expectGood(result: IngestResult, label: string): void {
  if (!result.ok) throw new Error(`${label}: expected ok, got error ${result.error}`);
  expect(result.chunks.length).toBeGreaterThan(0);
  result.chunks.forEach((chunk, index) => {
    expect(chunk.ord).toBe(index);
    expect(chunk.text.trim().length).toBeGreaterThan(0);
    expect(chunk.text.length).toBeLessThanOrEqual(2000); // the chunker's documented maximum
    expect(typeof chunk.heading).toBe('string');
  });
}

const GOOD_DOC = '# Guide\n\n## Setup\n\nInstall the service and start it. It listens on port 8080 by default.\n';

let pool: IngestionPool;

beforeAll(() => {
  if (!existsSync(workerFile)) {
    throw new Error(`${workerFile} is missing: build first (npm run build, or npx tsc -p tsconfig.build.json)`);
  }
  pool = new IngestionPool({ processes: 2 });
});

afterAll(async () => {
  await pool?.close();
});

describe('IngestionPool', () => {
  it('rejects a bad process count and bad limits', () => {
    expect(() => new IngestionPool({ processes: 0 })).toThrow(RangeError);
    expect(() => new IngestionPool({ processes: 1, maxExpandedBytes: -1 })).toThrow(/maxExpandedBytes must be an integer >= 0/);
    expect(() => new IngestionPool({ processes: 1, memoryMb: 4 })).toThrow(/memoryMb must be an integer >= 8/);
    expect(() => new IngestionPool({ processes: 1, timeoutMs: 0 })).toThrow(/timeoutMs must be an integer >= 1/);
  });

  it('ingests every page of the project docs', async () => {
    const files = markdownFiles(docsDir);
    expect(files.map((f) => path.basename(f))).toEqual(expect.arrayContaining(['chat.md', 'getting-started.md', 'knowledge-bases.md']));
    const results = await Promise.all(
      files.map((file) => pool.run({ title: path.basename(file), contentType: 'text/markdown', content: readFileSync(file) })),
    );
    results.forEach((result, i) => expectGood(result, files[i] ?? ''));
  });

  it('fails corrupt and empty documents with a reason while a concurrent good one succeeds', async () => {
    const tasks: IngestTask[] = [
      { title: 'corrupt', contentType: 'text/plain', content: new Uint8Array([0xff, 0xfe, 0x00, 0x41]) },
      { title: 'empty', contentType: 'text/markdown', content: new Uint8Array(0) },
      { title: 'blank', contentType: 'text/plain', content: ' \n\t\n ' },
      { title: 'nul', contentType: 'text/plain', content: new TextEncoder().encode('abc\u0000def') },
      { title: 'good', contentType: 'text/markdown', content: new TextEncoder().encode(GOOD_DOC) },
      { title: 'comments only', contentType: 'text/markdown', content: '<!-- YAML\nadded: v1.0.0\n-->\n' },
    ];
    const [corrupt, empty, blank, nul, good, commentsOnly] = await Promise.all(tasks.map((task) => pool.run(task)));
    expect(corrupt).toEqual({ ok: false, code: 'invalid_document', error: 'document is not valid UTF-8 text' });
    expect(empty).toEqual({ ok: false, code: 'invalid_document', error: 'document is empty' });
    expect(blank).toEqual({ ok: false, code: 'invalid_document', error: 'document is empty' });
    expect(nul).toEqual({ ok: false, code: 'invalid_document', error: 'document contains NUL bytes (corrupt or binary file)' });
    expect(commentsOnly).toEqual({ ok: false, code: 'invalid_document', error: 'document has no indexable text' });
    expect(good).toEqual({
      ok: true,
      chunks: [{ ord: 0, heading: 'Guide > Setup', page: null, text: 'Install the service and start it. It listens on port 8080 by default.' }],
      characters: 89,
    });

    const after = await pool.run({ title: 'after', contentType: 'text/plain', content: 'Still serving.' });
    expect(after.ok).toBe(true);
  });

  it('reports an invalid task and a worker failure as ok:false, and keeps serving', async () => {
    const invalid = await pool.run({ title: 'x', contentType: 'application/msword', content: 'x' } as unknown as IngestTask);
    expect(invalid).toEqual({ ok: false, code: 'invalid_document', error: expect.stringMatching(/^invalid ingestion task: contentType/) });

    // A function cannot be sent to a parser process: sending throws, and IngestionPool turns it into a failure.
    const broken = await pool.run({ title: 'x', contentType: 'text/plain', content: (() => 'x') as unknown as string });
    expect(broken).toEqual({ ok: false, code: 'ingestion_failed', error: expect.stringMatching(/^ingestion worker failed: /) });

    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => pool.run({ title: `t${n}`, contentType: 'text/plain', content: `Document number ${n}.` })),
    );
    for (const result of results) expect(result.ok).toBe(true);
  });

  it('sends a large upload in slices and gets a large result back in batches, whole and in order', async () => {
    // Over 1 MiB of content (several PartMessages) and over 512 chunks (several ChunksMessages).
    const paragraphs = Array.from({ length: 1500 }, (_, i) => `Paragraph ${i} ${'of plain words about buffers and streams '.repeat(20)}`);
    const content = new TextEncoder().encode(paragraphs.join('\n\n'));
    expect(content.byteLength).toBeGreaterThan(1024 * 1024);
    const result = await pool.run({ title: 'large', contentType: 'text/plain', content });
    if (!result.ok) throw new Error(result.error);
    expect(result.characters).toBe(content.byteLength);
    expect(result.chunks.length).toBeGreaterThan(512);
    expect(result.chunks.map((c) => c.ord)).toEqual(result.chunks.map((_, i) => i));
    expect(result.chunks[0]!.text.startsWith('Paragraph 0 ')).toBe(true);
    expect(result.chunks.at(-1)!.text.endsWith('buffers and streams')).toBe(true);
    expect(result.chunks.at(-1)!.text).toContain('Paragraph 1499 ');
  });
});

describe.skipIf(!hasCorpus)('IngestionPool over the Node.js API corpus', () => {
  it('ingests every corpus file into clean chunks', async () => {
    const files = markdownFiles(corpusDir);
    expect(files.length).toBeGreaterThanOrEqual(22);
    const started = performance.now();
    const results = await Promise.all(
      files.map((file) => pool.run({ title: path.basename(file), contentType: 'text/markdown', content: readFileSync(file) })),
    );
    const elapsedMs = performance.now() - started;
    let chunkCount = 0;
    let characters = 0;
    results.forEach((result, i) => {
      expectGood(result, files[i] ?? '');
      const ok = result as Extract<IngestResult, { ok: true }>;
      chunkCount += ok.chunks.length;
      characters += ok.characters;
      for (const chunk of ok.chunks) {
        expect(chunk.text).not.toContain('<!--');
        expect(chunk.text).not.toMatch(/\]\(https?:/);
      }
    });
    console.log(
      `corpus ingestion: ${files.length} files, ${characters} characters, ${chunkCount} chunks in ${elapsedMs.toFixed(0)} ms (2 threads)`,
    );

    const crypto = results[files.findIndex((f) => f.endsWith('crypto.md'))] as Extract<IngestResult, { ok: true }>;
    expect(crypto.chunks.map((c) => c.heading)).toContain('Crypto > Class: Hash > hash.update(data[, inputEncoding])');
  });
});

describe('IngestionPool warm-up', () => {
  async function until(check: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not true after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('rejects a warm-up round count that is not an integer >= 0', () => {
    expect(() => new IngestionPool({ processes: 1, warmUpRounds: -1 })).toThrow(RangeError);
    expect(() => new IngestionPool({ processes: 1, warmUpRounds: 1.5 })).toThrow(/warmUpRounds must be an integer >= 0, got 1.5/);
  });

  it('starts every worker with the pool and warms each one up before any document arrives', async () => {
    const warm = new IngestionPool({ processes: 2, warmUpRounds: 1 });
    try {
      expect(warm.warmedUp).toBe(0);
      await until(() => warm.warmedUp === 2, 30_000);
      // A warm pool still ingests as a cold one does.
      const result = await warm.run({ title: 'guide', contentType: 'text/markdown', content: GOOD_DOC });
      expectGood(result, 'after warm-up');
      expect(result).toMatchObject({ ok: true, chunks: [{ ord: 0, heading: 'Guide > Setup' }] });
      expect(warm.warmedUp).toBe(2);
    } finally {
      await warm.close();
    }
  });

  it('without warm-up starts no worker before a document, and counts none warm after one', async () => {
    const cold = new IngestionPool({ processes: 2 });
    try {
      expectGood(await cold.run({ title: 'guide', contentType: 'text/markdown', content: GOOD_DOC }), 'cold pool');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(cold.warmedUp).toBe(0);
    } finally {
      await cold.close();
    }
  });

  it('a worker replaced after a document past its time bound warms up again', async () => {
    const warm = new IngestionPool({ processes: 1, warmUpRounds: 1, timeoutMs: 1 });
    try {
      await until(() => warm.warmedUp === 1, 30_000);
      // 1 ms is too short for this document: its worker is terminated and a new one starts, warm again.
      const big = `# Big\n\n${'A sentence of prose about streams and buffers. '.repeat(40_000)}\n`;
      const result = await warm.run({ title: 'big', contentType: 'text/markdown', content: big });
      expect(result).toEqual({ ok: false, code: 'ingestion_timeout', error: 'document took longer than 1 ms to parse (the ingestion time limit)' });
      await until(() => warm.warmedUp === 2, 30_000);
    } finally {
      await warm.close();
    }
  });
});
