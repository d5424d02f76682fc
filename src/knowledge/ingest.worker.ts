/**
 * The ingestion worker: a Piscina worker module (loaded from its compiled form,
 * `dist/src/knowledge/ingest.worker.js`, by src/knowledge/ingestion-pool.ts) that decodes,
 * parses and chunks one document per task. The main thread stores the chunks.
 */
// Piscina (5.x) hands its `workerData` option to the thread as node's own; importing it from
// node:worker_threads spares each new worker loading Piscina's pool module (about 15 ms of CPU).
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from '../workers/thread-priority.js';
import { chunkSections } from './chunker.js';
import { markdownNestingDepth, MAX_MARKDOWN_NESTING, parseDocument, type Section } from './parse-document.js';
import type { IngestWorkerData } from './ingestion-pool.js';
import { DOCUMENT_CONTENT_TYPES, DOCX_CONTENT_TYPE, type IngestResult, type IngestTask } from './types.js';
import { WARM_UP_DONE, warmUpDocuments, type WarmUpDone } from './warm-up.js';

// The HTML/DOCX and PDF parsers (linkedom, Readability, mammoth, pdf.js: several MB of code) load on
// the first document that needs them, so a worker that only sees text starts fast and small.
let htmlModule: Promise<typeof import('./parse-html.js')> | undefined;
let pdfModule: Promise<typeof import('./parse-pdf.js')> | undefined;
const loadHtml = () => (htmlModule ??= import('./parse-html.js'));
const loadPdf = () => (pdfModule ??= import('./parse-pdf.js'));

// Parsing yields the CPU to the event loop that streams tokens (IngestionPoolOptions.nice). Loaded
// outside a pool (tests calling the default export directly) there is no workerData: nothing changes.
const settings = workerData as Partial<IngestWorkerData> | undefined;
const niceValue = settings?.nice;
if (typeof niceValue === 'number' && niceValue > 0) lowerThreadPriority(niceValue);

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
 * Never throws for a bad task or document; it resolves `{ok:false, error}` with a one-line reason:
 * `invalid ingestion task: ...`, `document is empty` (no bytes, or only whitespace),
 * `document is not valid UTF-8 text`, `document contains NUL bytes (corrupt or binary file)`,
 * `document nests deeper than 64 levels (block quotes or lists)` (Markdown only, checked by a linear
 * scan before the recursive parser runs, see MAX_MARKDOWN_NESTING),
 * `document is encrypted (password-protected PDF)`, `document is not a valid PDF (corrupt or truncated)`,
 * `document is not a valid DOCX file: ...`, `document has no indexable text` (for a PDF, with a hint
 * that a scanned PDF has no text layer), or `document could not be parsed: ...`.
 * On success `characters` is the length of the text indexed, in UTF-16 code units: the decoded text
 * (BOM excluded, line ends as uploaded) for text formats, the chunks' text for PDF and DOCX.
 */
export default async function ingest(task: IngestTask): Promise<IngestResult> {
  const invalid = invalidTask(task);
  if (invalid !== undefined) return fail(`invalid ingestion task: ${invalid}`);
  const { contentType, content } = task;

  if (contentType === 'application/pdf' || contentType === DOCX_CONTENT_TYPE) {
    if (typeof content === 'string') return fail(`invalid ingestion task: content: ${contentType} needs the file's bytes`);
    if (content.byteLength === 0) return fail('document is empty');
    let sections: Section[];
    try {
      if (contentType === 'application/pdf') {
        const { InvalidPdfError, parsePdf } = await loadPdf();
        try {
          sections = await parsePdf(content);
        } catch (err) {
          if (err instanceof InvalidPdfError) return fail(err.message);
          throw err;
        }
      } else {
        const { InvalidDocxError, parseDocx } = await loadHtml();
        try {
          sections = await parseDocx(content);
        } catch (err) {
          if (err instanceof InvalidDocxError) return fail(err.message);
          throw err;
        }
      }
    } catch (err) {
      return fail(`document could not be parsed: ${err instanceof Error ? err.message : String(err)}`);
    }
    return chunked(sections, null, contentType === 'application/pdf'
      ? 'document has no indexable text (a scanned PDF has images of text, not text)'
      : 'document has no indexable text');
  }

  let text: string;
  if (typeof content === 'string') {
    text = content.charCodeAt(0) === 0xfeff ? content.slice(1) : content;
  } else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(content);
    } catch {
      return fail('document is not valid UTF-8 text');
    }
  }
  if (text.includes('\u0000')) return fail('document contains NUL bytes (corrupt or binary file)');
  if (text.trim().length === 0) return fail('document is empty');
  if (contentType === 'text/markdown' && markdownNestingDepth(text, MAX_MARKDOWN_NESTING) > MAX_MARKDOWN_NESTING) {
    return fail(`document nests deeper than ${MAX_MARKDOWN_NESTING} levels (block quotes or lists)`);
  }
  try {
    const sections = contentType === 'text/html' ? (await loadHtml()).parseHtml(text) : parseDocument(text, contentType);
    return chunked(sections, text.length, 'document has no indexable text');
  } catch (err) {
    return fail(`document could not be parsed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Chunks `sections`; `characters` null means the sum of the chunks' lengths. */
function chunked(sections: Section[], characters: number | null, noText: string): IngestResult {
  const chunks = chunkSections(sections);
  if (chunks.length === 0) return fail(noText);
  return { ok: true, chunks, characters: characters ?? chunks.reduce((n, c) => n + c.text.length, 0) };
}

function fail(error: string): IngestResult {
  return { ok: false, error: error.replace(/\s+/g, ' ').trim().slice(0, 500) };
}

/**
 * Parses and chunks the warm-up documents (src/knowledge/warm-up.ts) `rounds` times, as UTF-8 bytes like
 * uploads, then tells the pool (a {@link WarmUpDone} message on the parent port). Never throws: a failed
 * round only leaves the worker less warm. Resolves the time it took, ms.
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
  const ms = performance.now() - started;
  const done: WarmUpDone = { [WARM_UP_DONE]: { rounds, ms } };
  parentPort?.postMessage(done);
  return ms;
}

// In a pool started with warm-up (IngestionPoolOptions.warmUpRounds), the worker warms up before Piscina
// hands it its first task: Piscina imports this module, and waits for it, before the worker takes tasks.
if (typeof settings?.warmUpRounds === 'number' && settings.warmUpRounds > 0) await warmUp(settings.warmUpRounds);
