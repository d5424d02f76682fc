import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { countingHook, instrumentPdfWorker, loadInstrumentedPdfWorker, PDF_DECODE_HOOK, PDF_WORKER_PATCHES } from '../../src/knowledge/pdfjs-instrumented.js';

const source = readFileSync(createRequire(import.meta.url).resolve('pdfjs-dist/legacy/build/pdf.worker.mjs'), 'utf8');
const CALL = 'globalThis[Symbol.for("parley.pdfjs.decoded")]?.';

describe('instrumentPdfWorker (the installed pdf.js)', () => {
  it('adds one counting call after each anchor, and nothing else', () => {
    const out = instrumentPdfWorker(source);
    expect(out.length).toBe(source.length + PDF_WORKER_PATCHES.reduce((n, p) => n + p.insert.length, 0));
    expect(out.split(CALL).length - 1).toBe(3);
    expect(out).toContain(`  ensureBuffer(requested) {\n    const buffer = this.buffer;\n    ${CALL}grow(this, requested);\n`);
    expect(out).toContain(`        totalLength += chunk.byteLength;\n        ${CALL}add(chunk.byteLength);\n`);
    expect(out).toContain(`      totalOutput += s.outputUsed;\n      ${CALL}add(s.outputUsed);\n`);
    expect(Symbol.for('parley.pdfjs.decoded')).toBe(PDF_DECODE_HOOK);
  });

  it('refuses a source where an anchor is missing or found twice', () => {
    const [ensure] = PDF_WORKER_PATCHES;
    expect(() => instrumentPdfWorker(source.replace(ensure!.anchor, ''))).toThrow(/DecodeStream.ensureBuffer anchor is missing/);
    expect(() => instrumentPdfWorker(source + ensure!.anchor)).toThrow(/DecodeStream.ensureBuffer anchor is not unique/);
    expect(() => instrumentPdfWorker('')).toThrow(/anchor is missing/);
    const [, chunks, brotli] = PDF_WORKER_PATCHES;
    expect(() => instrumentPdfWorker(source.replace(chunks!.anchor, ''))).toThrow('cannot count the bytes pdf.js decodes: the asyncGetBytesFromDecompressionStream anchor is missing in pdf.worker.mjs (pdfjs-dist changed?)');
    expect(() => instrumentPdfWorker(source.replace(brotli!.anchor, ''))).toThrow(/the BrotliDecode anchor is missing/);
  });

  it('finds an anchor at the very start of the source', () => {
    const anchors = PDF_WORKER_PATCHES.map((p) => p.anchor).join('');
    expect(instrumentPdfWorker(anchors).split(CALL).length - 1).toBe(3);
  });
});

describe('loadInstrumentedPdfWorker', () => {
  it('installs the instrumented pdf.js core as globalThis.pdfjsWorker, once, and pdf.js then calls the hook while it decodes', async () => {
    await loadInstrumentedPdfWorker();
    const installed = (globalThis as { pdfjsWorker?: { WorkerMessageHandler?: unknown } }).pdfjsWorker?.WorkerMessageHandler;
    expect(typeof installed).toBe('function');
    await loadInstrumentedPdfWorker();
    expect((globalThis as { pdfjsWorker?: { WorkerMessageHandler?: unknown } }).pdfjsWorker?.WorkerMessageHandler).toBe(installed);

    const calls: number[] = [];
    const hooks = globalThis as { [PDF_DECODE_HOOK]?: unknown };
    hooks[PDF_DECODE_HOOK] = countingHook((n) => calls.push(n));
    const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
    const task = getDocument({ data: new Uint8Array(readFileSync(new URL('../fixtures/operations.pdf', import.meta.url))), verbosity: 0 });
    try {
      const page = await (await task.promise).getPage(1);
      await page.getTextContent();
    } finally {
      delete hooks[PDF_DECODE_HOOK];
      await task.destroy();
    }
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.reduce((a, b) => a + b, 0)).toBeGreaterThan(1000);
  });
});

describe('countingHook', () => {
  it('counts how far each stream\'s request goes past its own previous one, and every added piece', () => {
    const taken: number[] = [];
    const hook = countingHook((n) => taken.push(n));
    const a = {};
    const b = {};
    hook.grow(a, 512);
    hook.grow(a, 300); // smaller than before: nothing new
    hook.grow(a, 512); // the same: nothing new
    hook.grow(a, 2048);
    hook.grow(b, 100);
    hook.add(16_384);
    expect(taken).toEqual([512, 1536, 100, 16_384]);
  });

  it('lets the budget\'s throw through', () => {
    const hook = countingHook(() => { throw new Error('too large'); });
    expect(() => hook.grow({}, 1)).toThrow('too large');
    expect(() => hook.add(1)).toThrow('too large');
  });
});
