/**
 * PDF parsing for knowledge-base ingestion with Mozilla's pdf.js (`pdfjs-dist`, its legacy build for
 * Node.js): the text layer of every page, split into paragraphs by the vertical gaps between lines,
 * with the page number kept on each section so that a citation can name the page.
 *
 * Runs inside the ingestion worker (src/knowledge/ingest.worker.ts).
 */
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { DEFAULT_MAX_EXPANDED_BYTES, DocumentTooLargeError, ExpansionBudget } from './expansion-limit.js';
import { collapseWhitespace, headingPath, type Section } from './parse-document.js';
import { countingHook, loadInstrumentedPdfWorker, PDF_DECODE_HOOK } from './pdfjs-instrumented.js';

// pdf.js's core with the decoded-byte counting calls (src/knowledge/pdfjs-instrumented.ts), in place
// before the first getDocument sets up its fake worker.
await loadInstrumentedPdfWorker();

/** A PDF that cannot be read: the reason for the document's `error`. */
export class InvalidPdfError extends Error {}

/** One line of a page's text: its text, font height (PDF units) and baseline y. */
interface Line {
  text: string;
  height: number;
  y: number;
}

/** A line whose font is at least this many times the body text's counts as a heading (when short). */
const HEADING_SCALE = 1.2;
/** Longest line, characters, that may be a heading. */
const HEADING_MAX_CHARS = 120;
/** A gap between baselines larger than this many line heights starts a new paragraph. */
const PARAGRAPH_GAP = 1.6;

interface TextItemLike {
  str?: unknown;
  hasEOL?: unknown;
  transform?: unknown;
  height?: unknown;
}

/** The lines of one page, from pdf.js text items in content order (an item with `hasEOL` ends a line). */
function pageLines(items: TextItemLike[]): Line[] {
  const lines: Line[] = [];
  let text = '';
  let height = 0;
  let y = Number.NaN;
  const end = (): void => {
    if (text.trim().length > 0) lines.push({ text: collapseWhitespace(text), height, y });
    text = '';
    height = 0;
    y = Number.NaN;
  };
  for (const item of items) {
    if (typeof item.str !== 'string') continue; // marked-content items
    const transform = Array.isArray(item.transform) ? (item.transform as number[]) : [];
    const itemY = typeof transform[5] === 'number' ? transform[5] : Number.NaN;
    // A new baseline without an end-of-line mark still starts a new line.
    if (text.length > 0 && Number.isFinite(y) && Number.isFinite(itemY) && Math.abs(itemY - y) > Math.max(height, 1) * 0.5) end();
    if (item.str.length > 0) {
      if (!Number.isFinite(y)) y = itemY;
      text += item.str;
      if (typeof item.height === 'number' && item.height > height) height = item.height;
    }
    if (item.hasEOL === true) end();
  }
  end();
  return lines;
}

/** The most common line height across the document, weighted by characters: the body text's size. */
function bodyHeight(pages: Line[][]): number {
  const weight = new Map<number, number>();
  for (const page of pages) {
    for (const line of page) {
      const h = Math.round(line.height * 2) / 2;
      weight.set(h, (weight.get(h) ?? 0) + line.text.length);
    }
  }
  let best = 0;
  let bestWeight = -1;
  for (const [h, w] of weight) if (w > bestWeight) { best = h; bestWeight = w; }
  return best;
}

/** The text items of one page, read through pdf.js's text stream so that each batch is counted as it comes. */
async function pageItems(page: { streamTextContent(): ReadableStream<{ items: unknown[] }> }, text: ExpansionBudget, decoded: ExpansionBudget): Promise<TextItemLike[]> {
  const reader = page.streamTextContent().getReader();
  const items: TextItemLike[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const item of value.items as TextItemLike[]) {
        if (typeof item.str === 'string') text.take(item.str.length);
        items.push(item);
      }
      // pdf.js recovers from errors inside a content stream (the counting hook's among them): look again.
      if (decoded.exceeded) throw decoded.exceeded;
    }
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    throw err;
  }
  if (decoded.exceeded) throw decoded.exceeded;
  return items;
}

/**
 * Sections of a PDF: one or more per page, each with its 1-based `page`. Within a page, lines are
 * joined into paragraphs, a new paragraph starting where the gap to the previous baseline exceeds 1.6
 * line heights. A short line (at most 120 characters) set in a font at least 1.2 times the body text's
 * size (the most common size, by characters) is taken as a heading: larger sizes are higher levels,
 * and the heading path carries over to the next pages until the next heading.
 *
 * Bounded by `maxExpandedBytes` (PARLEY_INGEST_MAX_EXPANDED_BYTES): the bytes pdf.js decodes from the
 * file's streams (FlateDecode and every other filter, object streams and fonts included), counted as they
 * are decoded (src/knowledge/pdfjs-instrumented.ts), and the characters of text extracted, counted as each
 * batch of a page's text arrives.
 *
 * @throws DocumentTooLargeError past either bound.
 * @throws InvalidPdfError `document is encrypted (password-protected PDF)`, or
 *   `document is not a valid PDF (corrupt or truncated)`, or `document could not be parsed: ...`.
 */
export async function parsePdf(bytes: Uint8Array, maxExpandedBytes = DEFAULT_MAX_EXPANDED_BYTES): Promise<Section[]> {
  const decoded = new ExpansionBudget(maxExpandedBytes, 'decompressed bytes');
  const text = new ExpansionBudget(maxExpandedBytes, 'text characters');
  const hooks = globalThis as { [PDF_DECODE_HOOK]?: unknown };
  hooks[PDF_DECODE_HOOK] = countingHook((n) => decoded.take(n));
  const task = getDocument({
    data: bytes,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  let pages: Line[][];
  try {
    const pdf = await task.promise;
    pages = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      pages.push(pageLines(await pageItems(page as unknown as Parameters<typeof pageItems>[0], text, decoded)));
      page.cleanup();
    }
  } catch (err) {
    if (err instanceof DocumentTooLargeError) throw err;
    if (decoded.exceeded) throw decoded.exceeded;
    const name = (err as { name?: unknown } | null)?.name;
    if (name === 'PasswordException') throw new InvalidPdfError('document is encrypted (password-protected PDF)');
    if (name === 'InvalidPDFException') throw new InvalidPdfError('document is not a valid PDF (corrupt or truncated)');
    throw new InvalidPdfError(`document could not be parsed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    delete hooks[PDF_DECODE_HOOK];
    await task.destroy().catch(() => undefined);
  }

  const body = bodyHeight(pages);
  const headingSizes = [...new Set(pages.flat()
    .filter((l) => l.height >= body * HEADING_SCALE && l.text.length <= HEADING_MAX_CHARS)
    .map((l) => Math.round(l.height * 2) / 2))].sort((a, b) => b - a).slice(0, 6);

  const sections: Section[] = [];
  const stack: string[] = [];
  pages.forEach((lines, index) => {
    const page = index + 1;
    let current: Section = { heading: headingPath(stack), paragraphs: [], page };
    let paragraph = '';
    let last: Line | undefined;
    const endParagraph = (): void => {
      if (paragraph.trim().length > 0) current.paragraphs.push(collapseWhitespace(paragraph));
      paragraph = '';
    };
    for (const line of lines) {
      const level = line.text.length <= HEADING_MAX_CHARS ? headingSizes.indexOf(Math.round(line.height * 2) / 2) : -1;
      if (level >= 0) {
        endParagraph();
        if (current.paragraphs.length > 0) sections.push(current);
        stack.length = level + 1;
        stack[level] = line.text;
        current = { heading: headingPath(stack), paragraphs: [], page };
        last = undefined;
        continue;
      }
      const gap = last ? Math.abs(last.y - line.y) : 0;
      if (last && gap > Math.max(last.height, line.height, 1) * PARAGRAPH_GAP) endParagraph();
      paragraph += ` ${line.text}`;
      last = line;
    }
    endParagraph();
    if (current.paragraphs.length > 0) sections.push(current);
  });
  return sections;
}
