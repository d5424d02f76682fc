/**
 * The ingestion function: decodes, parses and chunks one document per call. The parser processes of
 * src/knowledge/ingestion-pool.ts run it (src/knowledge/ingest.process.ts loads this module, compiled:
 * `dist/src/knowledge/ingest.worker.js`); the main thread stores the chunks. The ingest floor of the
 * bench runs it in bare worker threads (bench/floor/ingest-parse.worker.ts).
 */
import { chunkSections } from './chunker.js';
import { DEFAULT_MAX_EXPANDED_BYTES, DocumentTooLargeError, ExpansionBudget } from './expansion-limit.js';
import { markdownNestingDepth, MAX_MARKDOWN_NESTING, parseDocument, type Section } from './parse-document.js';
import { DOCUMENT_CONTENT_TYPES, DOCX_CONTENT_TYPE, type DocumentErrorCode, type IngestResult, type IngestTask } from './types.js';
import { warmUpDocuments } from './warm-up.js';

// The HTML/DOCX and PDF parsers (linkedom, Readability, mammoth, pdf.js: several MB of code) load on
// the first document that needs them, so a process that only sees text starts fast and small.
let htmlModule: Promise<typeof import('./parse-html.js')> | undefined;
let pdfModule: Promise<typeof import('./parse-pdf.js')> | undefined;
const loadHtml = () => (htmlModule ??= import('./parse-html.js'));
const loadPdf = () => (pdfModule ??= import('./parse-pdf.js'));

const CONTENT_TYPES: ReadonlySet<string> = new Set(DOCUMENT_CONTENT_TYPES);

/**
 * Why `task` is not an {@link IngestTask} (`'<field>: <reason>'`), or undefined when it is one. Checked by
 * hand rather than with zod: importing zod costs a worker about 60 ms of CPU at start, per worker.
 */
export function invalidTask(task: unknown): string | undefined {
  if (typeof task !== 'object' || task === null) return 'expected an object';
  const t = task as Record<string, unknown>;
  if (typeof t.title !== 'string') return 'title: expected a string';
  if (typeof t.contentType !== 'string' || !CONTENT_TYPES.has(t.contentType)) {
    return `contentType: expected one of ${DOCUMENT_CONTENT_TYPES.join(', ')}`;
  }
  if (typeof t.content !== 'string' && !(t.content instanceof Uint8Array)) return 'content: expected a string or bytes';
  if (t.maxExpandedBytes !== undefined && !(Number.isInteger(t.maxExpandedBytes) && (t.maxExpandedBytes as number) >= 0)) return 'maxExpandedBytes: expected an integer >= 0';
  if (t.memoryMb !== undefined && !(Number.isInteger(t.memoryMb) && (t.memoryMb as number) > 0)) return 'memoryMb: expected an integer > 0';
  return undefined;
}

/**
 * Ingests one document: validates the task, parses it by `contentType` and chunks it with the
 * default sizes of src/knowledge/chunker.ts.
 *
 * - Text formats (`text/plain`, `text/markdown`, `text/html`): bytes are decoded as strict UTF-8 (a
 *   leading BOM dropped; strings are taken as they are), then parsed by src/knowledge/parse-document.ts
 *   or, for HTML, src/knowledge/parse-html.ts (Readability's main text).
 * - `application/pdf` (src/knowledge/parse-pdf.ts, chunks carry their page) and DOCX
 *   (src/knowledge/parse-html.ts, mammoth) take the bytes; a string content is refused.
 *
 * The expansion limit (`task.maxExpandedBytes`, default DEFAULT_MAX_EXPANDED_BYTES) bounds the bytes a
 * PDF or DOCX decompresses to, counted while inflating, and the characters of text of every format.
 *
 * Never throws for a bad task or document; it resolves `{ok:false, code, error}` with a one-line reason:
 * - `invalid_document`: `invalid ingestion task: ...`, `document is empty` (no bytes, or only whitespace),
 *   `document is not valid UTF-8 text`, `document contains NUL bytes (corrupt or binary file)`,
 *   `document nests deeper than 64 levels (block quotes or lists)` (Markdown only, checked by a linear
 *   scan before the recursive parser runs, see MAX_MARKDOWN_NESTING),
 *   `document is encrypted (password-protected PDF)`, `document is not a valid PDF (corrupt or truncated)`,
 *   `document is not a valid DOCX file: ...`, `document has no indexable text` (for a PDF, with a hint
 *   that a scanned PDF has no text layer), or `document could not be parsed: ...`;
 * - `document_too_large`: `document expands to more than N decompressed bytes (the ingestion expansion
 *   limit)`, `... N text characters ...`, or, when an allocation fails (a parser process at its memory
 *   limit), `document needs more than N MB of memory to parse (the ingestion memory limit)`.
 * On success `characters` is the length of the text indexed, in UTF-16 code units: the decoded text
 * (BOM excluded, line ends as uploaded) for text formats, the chunks' text for PDF and DOCX.
 */
export default async function ingest(task: IngestTask & { memoryMb?: number }): Promise<IngestResult> {
  const invalid = invalidTask(task);
  if (invalid !== undefined) return fail('invalid_document', `invalid ingestion task: ${invalid}`);
  const { contentType, content } = task;
  const limit = task.maxExpandedBytes ?? DEFAULT_MAX_EXPANDED_BYTES;
  const text = new ExpansionBudget(limit, 'text characters');
  try {
    if (contentType === 'application/pdf' || contentType === DOCX_CONTENT_TYPE) {
      if (typeof content === 'string') return fail('invalid_document', `invalid ingestion task: content: ${contentType} needs the file's bytes`);
      if (content.byteLength === 0) return fail('invalid_document', 'document is empty');
      let sections: Section[];
      if (contentType === 'application/pdf') {
        const { InvalidPdfError, parsePdf } = await loadPdf();
        try {
          sections = await parsePdf(content, limit);
        } catch (err) {
          if (err instanceof InvalidPdfError) return fail('invalid_document', err.message);
          throw err;
        }
      } else {
        const { InvalidDocxError, parseDocx } = await loadHtml();
        try {
          sections = await parseDocx(content, limit);
        } catch (err) {
          if (err instanceof InvalidDocxError) return fail('invalid_document', err.message);
          throw err;
        }
      }
      return chunked(sections, null, text, contentType === 'application/pdf'
        ? 'document has no indexable text (a scanned PDF has images of text, not text)'
        : 'document has no indexable text');
    }

    let decoded: string;
    if (typeof content === 'string') {
      decoded = content.charCodeAt(0) === 0xfeff ? content.slice(1) : content;
    } else {
      try {
        decoded = new TextDecoder('utf-8', { fatal: true }).decode(content);
      } catch {
        return fail('invalid_document', 'document is not valid UTF-8 text');
      }
    }
    text.take(decoded.length);
    if (decoded.includes('\u0000')) return fail('invalid_document', 'document contains NUL bytes (corrupt or binary file)');
    if (decoded.trim().length === 0) return fail('invalid_document', 'document is empty');
    if (contentType === 'text/markdown' && markdownNestingDepth(decoded, MAX_MARKDOWN_NESTING) > MAX_MARKDOWN_NESTING) {
      return fail('invalid_document', `document nests deeper than ${MAX_MARKDOWN_NESTING} levels (block quotes or lists)`);
    }
    const sections = contentType === 'text/html' ? (await loadHtml()).parseHtml(decoded) : parseDocument(decoded, contentType);
    // The decoded text was counted; its sections hold no more text than it.
    return chunked(sections, decoded.length, new ExpansionBudget(limit, 'text characters'), 'document has no indexable text');
  } catch (err) {
    if (err instanceof DocumentTooLargeError) return fail('document_too_large', err.message);
    if (isAllocationFailure(err)) {
      const bound = task.memoryMb !== undefined ? `more than ${task.memoryMb} MB of memory` : 'more memory than its limit';
      return fail('document_too_large', `document needs ${bound} to parse (the ingestion memory limit)`);
    }
    return fail('invalid_document', `document could not be parsed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Whether `err` is V8 or Node.js refusing an allocation (a buffer, a string or an array too large for the
 * memory the process may use): `RangeError: Array buffer allocation failed`, `Invalid string length`,
 * `Invalid typed array length: N`, `Invalid array length`.
 */
export function isAllocationFailure(err: unknown): boolean {
  return err instanceof RangeError && /allocation failed|^Invalid (string|typed array|array) length/i.test(err.message);
}

/**
 * Chunks `sections` after counting their text (headings and paragraphs) against `text`; `characters` null
 * means the sum of the chunks' lengths.
 *
 * @throws DocumentTooLargeError past the text limit.
 */
function chunked(sections: Section[], characters: number | null, text: ExpansionBudget, noText: string): IngestResult {
  for (const section of sections) {
    text.take(section.heading.length);
    for (const paragraph of section.paragraphs) text.take(paragraph.length);
  }
  const chunks = chunkSections(sections);
  if (chunks.length === 0) return fail('invalid_document', noText);
  return { ok: true, chunks, characters: characters ?? chunks.reduce((n, c) => n + c.text.length, 0) };
}

function fail(code: DocumentErrorCode, error: string): IngestResult {
  return { ok: false, code, error: error.replace(/\s+/g, ' ').trim().slice(0, 500) };
}

/**
 * Parses and chunks the warm-up documents (src/knowledge/warm-up.ts) `rounds` times, as UTF-8 bytes like
 * uploads. Never throws: a failed round only leaves the process less warm. Resolves the time it took, ms.
 */
export async function warmUp(rounds: number): Promise<number> {
  const started = performance.now();
  const documents = warmUpDocuments();
  for (let i = 0; i < rounds; i++) {
    for (const content of documents) {
      try {
        await ingest({ title: 'warm-up', contentType: 'text/markdown', content });
      } catch {
        // ingest() resolves its failures; nothing else can go wrong here that a real document would not show.
      }
    }
  }
  return performance.now() - started;
}
