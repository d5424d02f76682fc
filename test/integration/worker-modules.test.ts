/**
 * What the worker threads load when they start: each ingestion worker and the SQLite writer and reader threads load
 * their own copy of their modules, so a heavy one (zod: ~60 ms of CPU) is paid by every thread start.
 * Reads the compiled modules in dist/ (`npm test` builds first).
 */
import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('worker thread modules', () => {
  it('the compiled ingestion worker and SQLite writer and reader threads load without zod (each thread would pay ~60 ms of CPU), and the ingestion worker without marked or the Piscina pool module', () => {
    // A module resolve hook (node:module register) prints every module URL resolved while each worker
    // module loads; the same hook run on a module that does use zod shows the probe can see it.
    const hook = `export async function resolve(s, c, next) { const r = await next(s, c); process.stdout.write(r.url + '\\n'); return r; }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const loaded = (file: string): string[] => execFileSync(process.execPath, [
      '--import', `data:text/javascript,${encodeURIComponent(register)}`,
      '-e', `import(${JSON.stringify(path.join(root, file))}).then(() => {}, () => {})`,
    ], { cwd: root, encoding: 'utf8' }).split('\n').filter((l) => l.length > 0);
    const zod = (urls: string[]) => urls.filter((u) => u.includes('/node_modules/zod/'));

    const ingestWorker = loaded('dist/src/knowledge/ingest.worker.js');
    expect(ingestWorker.some((u) => u.includes('/node_modules/md4w/'))).toBe(true);
    expect(zod(ingestWorker)).toEqual([]);
    // marked (the Markdown fallback, ~14 ms) loads only when md4c fails, and Piscina's pool module
    // (~15 ms) not at all: the worker takes its workerData from node:worker_threads.
    expect(ingestWorker.filter((u) => u.includes('/node_modules/marked/') || u.includes('/node_modules/piscina/'))).toEqual([]);
    const writerWorker = loaded('dist/src/store/sqlite/writer.worker.js');
    expect(writerWorker.some((u) => u.includes('/src/store/sqlite/conversation-writes.js'))).toBe(true);
    expect(zod(writerWorker)).toEqual([]);
    const readerWorker = loaded('dist/src/store/sqlite/reader.worker.js');
    expect(readerWorker.some((u) => u.includes('/src/store/sqlite/knowledge-search.js'))).toBe(true);
    expect(zod(readerWorker)).toEqual([]);
    expect(zod(loaded('dist/src/vocabulary/document.js')).length).toBeGreaterThan(0);
  });

  it('the compiled Markdown fallback loads marked on first use, outside vitest (require of an ES module)', () => {
    const script = `import(${JSON.stringify(path.join(root, 'dist/src/knowledge/parse-document.js'))})
      .then((m) => process.stdout.write(JSON.stringify(m.parseMarkdownMarked('# Title\\n\\nsome *emphasis* and \\\`code\\\`'))))`;
    const out = execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual([{ heading: 'Title', paragraphs: ['some emphasis and code'] }]);
  });
});
