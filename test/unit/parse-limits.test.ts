/**
 * The expansion limit inside the parsers (src/knowledge/expansion-limit.ts), on bombs made here
 * (test/helpers/bombs.ts): DOCX entries counted while JSZip inflates them, PDF streams counted by the
 * instrumented pdf.js, the text of every format counted, and the ingestion function's failure codes.
 */
import { describe, expect, it } from 'vitest';
import { DocumentTooLargeError } from '../../src/knowledge/expansion-limit.js';
import ingest, { isAllocationFailure } from '../../src/knowledge/ingest.worker.js';
import { InvalidDocxError, parseDocx } from '../../src/knowledge/parse-html.js';
import { parsePdf } from '../../src/knowledge/parse-pdf.js';
import { docxBomb, pdfBomb, smallDocx } from '../helpers/bombs.js';
import { fixturePdf } from '../helpers/broken-files.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const MIB = 1024 * 1024;

describe('DOCX: zip entries counted while inflating', () => {
  it('a bomb stops at the limit, whatever its zip directory declares', async () => {
    const bomb = docxBomb(8); // 128 MiB of one letter, declared as 4 KB
    await expect(parseDocx(bomb.file, 4 * MIB)).rejects.toThrow(new DocumentTooLargeError(`document expands to more than ${4 * MIB} decompressed bytes (the ingestion expansion limit)`));
    // Declaring the true size changes nothing: only what inflates counts.
    await expect(parseDocx(docxBomb(8, bomb.expandedBytes).file, 4 * MIB)).rejects.toBeInstanceOf(DocumentTooLargeError);
  });

  it('every entry draws on one budget: the whole document, not each entry, is bounded', async () => {
    const doc = smallDocx('Twelve words of text in one paragraph of a very small document.');
    // mammoth reads _rels/.rels (about 330 bytes) and word/document.xml (about 330): each fits in 400
    // bytes, both do not.
    expect(await parseDocx(doc, 2000)).toEqual([{ heading: '', paragraphs: ['Twelve words of text in one paragraph of a very small document.'] }]);
    await expect(parseDocx(doc, 400)).rejects.toBeInstanceOf(DocumentTooLargeError);
  });

  it('a zip whose directory lies, under the limit, is not a valid DOCX', async () => {
    await expect(parseDocx(docxBomb(1).file, 64 * MIB)).rejects.toThrow(InvalidDocxError);
  });
});

describe('PDF: decoded streams counted by the instrumented pdf.js', () => {
  it('a FlateDecode content stream that inflates past the limit fails as too large', async () => {
    const bomb = await pdfBomb(2); // 32 MiB of spaces
    // pdf.js takes the bytes over (their buffer is detached): each parse gets its own copy.
    await expect(parsePdf(bomb.file.slice(), 8 * MIB)).rejects.toThrow(`document expands to more than ${8 * MIB} decompressed bytes (the ingestion expansion limit)`);
    // pdf.js decodes a FlateDecode content stream twice (with the platform's DecompressionStream for the
    // text, and in JavaScript): both count, 64 MiB here.
    await expect(parsePdf(bomb.file.slice(), 48 * MIB)).rejects.toBeInstanceOf(DocumentTooLargeError);
    const sections = await parsePdf(bomb.file.slice(), 80 * MIB);
    expect(sections.flatMap((s) => s.paragraphs)).toEqual(['A page of a decompression bomb.']);
  });

  it('the fixture PDF decodes its streams (fonts, content) within a few hundred KB, and fails under that', async () => {
    expect((await parsePdf(fixturePdf(), 4 * MIB)).length).toBeGreaterThan(0);
    await expect(parsePdf(fixturePdf(), 1000)).rejects.toBeInstanceOf(DocumentTooLargeError);
  });
});

describe('ingest: the limit of every format, and its failure codes', () => {
  it('text past the limit fails as document_too_large; at the limit it is ingested', async () => {
    const text = 'a'.repeat(50);
    expect(await ingest({ title: 't', contentType: 'text/plain', content: text, maxExpandedBytes: 49 })).toEqual({
      ok: false, code: 'document_too_large', error: 'document expands to more than 49 text characters (the ingestion expansion limit)',
    });
    expect((await ingest({ title: 't', contentType: 'text/plain', content: text, maxExpandedBytes: 50 })).ok).toBe(true);
    expect((await ingest({ title: 't', contentType: 'text/html', content: `<p>${text}</p>`, maxExpandedBytes: 40 })).ok).toBe(false);
  });

  it('DOCX and PDF bombs fail as document_too_large with the default limit of 128 MiB', async () => {
    expect(await ingest({ title: 'b', contentType: DOCX, content: docxBomb(9).file })).toEqual({
      ok: false, code: 'document_too_large', error: 'document expands to more than 134217728 decompressed bytes (the ingestion expansion limit)',
    });
    expect(await ingest({ title: 'b', contentType: 'application/pdf', content: (await pdfBomb(9)).file })).toMatchObject({ ok: false, code: 'document_too_large' });
  });

  it('refuses a bad limit in the task', async () => {
    expect(await ingest({ title: 't', contentType: 'text/plain', content: 'x', maxExpandedBytes: -1 })).toEqual({
      ok: false, code: 'invalid_document', error: 'invalid ingestion task: maxExpandedBytes: expected an integer >= 0',
    });
    expect(await ingest({ title: 't', contentType: 'text/plain', content: 'x', memoryMb: 0 })).toMatchObject({ ok: false, error: 'invalid ingestion task: memoryMb: expected an integer > 0' });
  });

  it('tells an allocation refused by V8 or Node.js from other errors', () => {
    expect(isAllocationFailure(new RangeError('Array buffer allocation failed'))).toBe(true);
    expect(isAllocationFailure(new RangeError('Invalid string length'))).toBe(true);
    expect(isAllocationFailure(new RangeError('Invalid typed array length: 4294967296'))).toBe(true);
    expect(isAllocationFailure(new RangeError('Invalid array length'))).toBe(true);
    expect(isAllocationFailure(new RangeError('Maximum call stack size exceeded'))).toBe(false);
    expect(isAllocationFailure(new Error('Array buffer allocation failed'))).toBe(false);
    expect(isAllocationFailure('Invalid string length')).toBe(false);
  });
});
