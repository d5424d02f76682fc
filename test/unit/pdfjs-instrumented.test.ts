import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { countingHook, instrumentPdfWorker, PDF_DECODE_HOOK, PDF_WORKER_PATCHES } from '../../src/knowledge/pdfjs-instrumented.js';

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
