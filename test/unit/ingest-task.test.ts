/**
 * The ingestion worker's task check (src/knowledge/ingest.worker.ts, invalidTask), written by hand so the
 * worker does not load zod; and a guard that nothing the worker threads import brings zod back.
 */
import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { invalidTask } from '../../src/knowledge/ingest.worker.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('invalidTask', () => {
  it('accepts every upload media type with text or bytes', () => {
    for (const contentType of ['text/plain', 'text/markdown', 'text/html', 'application/pdf',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document']) {
      expect(invalidTask({ title: 't', contentType, content: 'x' })).toBeUndefined();
      expect(invalidTask({ title: '', contentType, content: new Uint8Array([1]) })).toBeUndefined();
    }
    expect(invalidTask({ title: 't', contentType: 'text/plain', content: Buffer.from('x') })).toBeUndefined();
  });

  it('names the field that is wrong', () => {
    expect(invalidTask(null)).toBe('expected an object');
    expect(invalidTask('text')).toBe('expected an object');
    expect(invalidTask({ contentType: 'text/plain', content: 'x' })).toBe('title: expected a string');
    expect(invalidTask({ title: 7, contentType: 'text/plain', content: 'x' })).toBe('title: expected a string');
    expect(invalidTask({ title: 't', contentType: 'application/msword', content: 'x' }))
      .toBe('contentType: expected one of text/plain, text/markdown, text/html, application/pdf, application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(invalidTask({ title: 't', content: 'x' })).toMatch(/^contentType: /);
    expect(invalidTask({ title: 't', contentType: 'text/plain' })).toBe('content: expected a string or bytes');
    expect(invalidTask({ title: 't', contentType: 'text/plain', content: [1, 2] })).toBe('content: expected a string or bytes');
    expect(invalidTask({ title: 't', contentType: 'text/plain', content: new ArrayBuffer(2) })).toBe('content: expected a string or bytes');
  });

  it('the compiled ingestion worker and SQLite writer thread load without zod (each thread would pay ~60 ms of CPU)', () => {
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
    expect(ingestWorker.some((u) => u.includes('/node_modules/marked/'))).toBe(true);
    expect(zod(ingestWorker)).toEqual([]);
    const writerWorker = loaded('dist/src/store/sqlite/writer.worker.js');
    expect(writerWorker.some((u) => u.includes('/src/store/sqlite/conversation-writes.js'))).toBe(true);
    expect(zod(writerWorker)).toEqual([]);
    expect(zod(loaded('dist/src/vocabulary/document.js')).length).toBeGreaterThan(0);
  });
});
