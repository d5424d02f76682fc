/**
 * The ingestion function itself (src/knowledge/ingest.worker.ts), called in this process: each reason a
 * document fails, with its `code`, and what a success counts. The parser processes run the same function
 * (test/integration/ingestion-pool.test.ts goes through them).
 */
import { PDFDocument } from 'pdf-lib';
import { describe, expect, it } from 'vitest';
import ingest from '../../src/knowledge/ingest.worker.js';
import { smallDocx } from '../helpers/bombs.js';
import { fixtureDocx, fixturePdf, truncatedPdf, zipOf } from '../helpers/broken-files.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const invalid = (error: string) => ({ ok: false, code: 'invalid_document', error });

describe('ingest: failures, each with its code', () => {
  it('PDF and DOCX need bytes, and some of them', async () => {
    expect(await ingest({ title: 't', contentType: 'application/pdf', content: '%PDF-1.7' })).toEqual(invalid('invalid ingestion task: content: application/pdf needs the file\'s bytes'));
    expect(await ingest({ title: 't', contentType: DOCX, content: 'PK' })).toEqual(invalid(`invalid ingestion task: content: ${DOCX} needs the file's bytes`));
    expect(await ingest({ title: 't', contentType: 'application/pdf', content: new Uint8Array(0) })).toEqual(invalid('document is empty'));
    expect(await ingest({ title: 't', contentType: DOCX, content: new Uint8Array(0) })).toEqual(invalid('document is empty'));
  });

  it('a file that is not its format, or holds no text', async () => {
    expect(await ingest({ title: 't', contentType: 'application/pdf', content: truncatedPdf() })).toEqual(invalid('document is not a valid PDF (corrupt or truncated)'));
    expect(await ingest({ title: 't', contentType: DOCX, content: zipOf({ 'a.txt': 'x' }) })).toMatchObject({ ok: false, code: 'invalid_document', error: expect.stringMatching(/^document is not a valid DOCX file: /) });
    const blank = await PDFDocument.create();
    blank.addPage();
    expect(await ingest({ title: 't', contentType: 'application/pdf', content: await blank.save() })).toEqual(invalid('document has no indexable text (a scanned PDF has images of text, not text)'));
    expect(await ingest({ title: 't', contentType: DOCX, content: smallDocx('') })).toEqual(invalid('document has no indexable text'));
  });

  it('text that is not UTF-8, holds NUL, is blank, or nests too deep', async () => {
    expect(await ingest({ title: 't', contentType: 'text/plain', content: new Uint8Array([0x48, 0xff, 0x49]) })).toEqual(invalid('document is not valid UTF-8 text'));
    expect(await ingest({ title: 't', contentType: 'text/plain', content: 'a\u0000b' })).toEqual(invalid('document contains NUL bytes (corrupt or binary file)'));
    expect(await ingest({ title: 't', contentType: 'text/markdown', content: new TextEncoder().encode(' \n\t ') })).toEqual(invalid('document is empty'));
    expect(await ingest({ title: 't', contentType: 'text/markdown', content: `${'>'.repeat(65)} deep\n` })).toEqual(invalid('document nests deeper than 64 levels (block quotes or lists)'));
    // 64 levels are allowed.
    expect((await ingest({ title: 't', contentType: 'text/markdown', content: `${'>'.repeat(64)} deep enough\n` })).ok).toBe(true);
    // Plain text is not Markdown: its `>` are text.
    expect((await ingest({ title: 't', contentType: 'text/plain', content: `${'>'.repeat(65)} deep\n` })).ok).toBe(true);
  });
});

describe('ingest: what a success counts', () => {
  it('text: the decoded characters, a leading BOM left out (string or bytes)', async () => {
    expect(await ingest({ title: 't', contentType: 'text/plain', content: '\ufeffHello world.' })).toEqual({
      ok: true, characters: 12, chunks: [{ ord: 0, heading: '', page: null, text: 'Hello world.' }],
    });
    expect(await ingest({ title: 't', contentType: 'text/plain', content: new TextEncoder().encode('\ufeffHello world.') })).toMatchObject({ ok: true, characters: 12 });
  });

  it('PDF and DOCX: the characters of their chunks', async () => {
    for (const [contentType, content] of [['application/pdf', fixturePdf()], [DOCX, fixtureDocx()]] as const) {
      const result = await ingest({ title: 't', contentType, content });
      if (!result.ok) throw new Error(result.error);
      expect(result.characters).toBe(result.chunks.reduce((n, c) => n + c.text.length, 0));
      expect(result.characters).toBeGreaterThan(1000);
    }
  });
});

