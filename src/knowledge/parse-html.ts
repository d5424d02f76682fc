/**
 * HTML and DOCX parsing for knowledge-base ingestion: the DOM comes from `linkedom`, the readable main
 * text of a web page from Mozilla's Readability, and a Word document becomes HTML through `mammoth`.
 * The DOM is then walked into {@link Section}s: headings (h1-h6) start sections under their heading
 * path, block elements become paragraphs.
 *
 * Runs inside the ingestion worker (src/knowledge/ingest.worker.ts).
 */
import { Readability } from '@mozilla/readability';
import JSZip from 'jszip';
import { parseHTML } from 'linkedom';
import mammoth from 'mammoth';
import { DEFAULT_MAX_EXPANDED_BYTES, DocumentTooLargeError, ExpansionBudget } from './expansion-limit.js';
import { codeText, collapseWhitespace, headingPath, type Section } from './parse-document.js';

/** Elements whose content is never text of the document: code, styling, navigation, page chrome, forms. */
const DROPPED = new Set([
  'script', 'style', 'noscript', 'template', 'nav', 'svg', 'canvas', 'iframe', 'object', 'embed',
  'head', 'header', 'footer', 'aside', 'form', 'button', 'select', 'textarea', 'input', 'dialog', 'menu',
]);

/** Elements that end the running paragraph and are walked on their own. */
const BLOCKS = new Set([
  'address', 'article', 'blockquote', 'body', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'hr', 'li', 'main', 'p', 'section', 'summary', 'caption', 'center', 'html',
]);

const HEADING = /^h([1-6])$/;

/** The part of the DOM the walker uses (linkedom's nodes, typed loosely: linkedom ships its own DOM types). */
interface DomNode {
  nodeType: number;
  localName?: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
  querySelectorAll?(selector: string): ArrayLike<DomNode>;
}

const ELEMENT = 1;
const TEXT = 3;

/** Builds sections: a heading stack and the paragraphs under the current heading. */
class SectionBuilder {
  readonly #sections: Section[] = [];
  readonly #stack: string[] = [];
  #current: Section = { heading: '', paragraphs: [] };

  heading(depth: number, text: string): void {
    const title = collapseWhitespace(text);
    if (title.length === 0) return;
    if (this.#current.paragraphs.length > 0) this.#sections.push(this.#current);
    this.#stack.length = depth;
    this.#stack[depth - 1] = title;
    this.#current = { heading: headingPath(this.#stack), paragraphs: [] };
  }

  paragraph(text: string): void {
    const trimmed = text.trim();
    if (trimmed.length > 0) this.#current.paragraphs.push(trimmed);
  }

  sections(): Section[] {
    if (this.#current.paragraphs.length > 0) this.#sections.push(this.#current);
    this.#current = { heading: this.#current.heading, paragraphs: [] };
    return this.#sections;
  }
}

function tagOf(node: DomNode): string {
  return (node.localName ?? '').toLowerCase();
}

/** Text of a node without its dropped descendants (scripts inside a paragraph, for instance). */
function textOf(node: DomNode): string {
  if (node.nodeType === TEXT) return node.textContent ?? '';
  if (node.nodeType !== ELEMENT) return '';
  const tag = tagOf(node);
  if (DROPPED.has(tag)) return '';
  if (tag === 'br') return '\n';
  let out = '';
  for (let i = 0; i < node.childNodes.length; i++) out += textOf(node.childNodes[i]!);
  // Block children inside an inline context still separate words.
  return BLOCKS.has(tag) || tag === 'tr' || tag === 'td' || tag === 'th' ? ` ${out} ` : out;
}

/** One line per list item (ordered ones numbered), nested lists flattened after their item. */
function listLines(list: DomNode): string[] {
  const ordered = tagOf(list) === 'ol';
  const lines: string[] = [];
  let n = 0;
  for (let i = 0; i < list.childNodes.length; i++) {
    const item = list.childNodes[i]!;
    if (item.nodeType !== ELEMENT || tagOf(item) !== 'li') continue;
    n++;
    let own = '';
    const nested: string[] = [];
    for (let j = 0; j < item.childNodes.length; j++) {
      const child = item.childNodes[j]!;
      const tag = child.nodeType === ELEMENT ? tagOf(child) : '';
      if (tag === 'ul' || tag === 'ol') nested.push(...listLines(child));
      else own += textOf(child);
    }
    const text = collapseWhitespace(own);
    if (text.length > 0) lines.push(ordered ? `${n}. ${text}` : text);
    lines.push(...nested);
  }
  return lines;
}

/** One line per table row, cells joined with ` | `; empty rows dropped. */
function tableLines(table: DomNode): string[] {
  const lines: string[] = [];
  const rows = table.querySelectorAll?.('tr') ?? [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const cells: string[] = [];
    for (let j = 0; j < row.childNodes.length; j++) {
      const cell = row.childNodes[j]!;
      const tag = cell.nodeType === ELEMENT ? tagOf(cell) : '';
      if (tag !== 'td' && tag !== 'th') continue;
      const text = collapseWhitespace(textOf(cell));
      if (text.length > 0) cells.push(text);
    }
    if (cells.length > 0) lines.push(cells.join(' | '));
  }
  return lines;
}

/**
 * Walks `node`'s children: text and inline elements accumulate into the running paragraph; a heading
 * starts a section; lists, tables and preformatted blocks become one paragraph each (one line per item,
 * row or code line); other blocks end the running paragraph and are walked in turn.
 */
function walk(node: DomNode, out: SectionBuilder): void {
  let inline = '';
  const flush = (): void => {
    out.paragraph(collapseWhitespace(inline));
    inline = '';
  };
  for (let i = 0; i < node.childNodes.length; i++) {
    const child = node.childNodes[i]!;
    if (child.nodeType === TEXT) { inline += child.textContent ?? ''; continue; }
    if (child.nodeType !== ELEMENT) continue;
    const tag = tagOf(child);
    if (DROPPED.has(tag)) continue;
    const heading = HEADING.exec(tag);
    if (heading) {
      flush();
      out.heading(Number(heading[1]), textOf(child));
    } else if (tag === 'ul' || tag === 'ol') {
      flush();
      out.paragraph(listLines(child).join('\n'));
    } else if (tag === 'table') {
      flush();
      out.paragraph(tableLines(child).join('\n'));
    } else if (tag === 'pre') {
      flush();
      out.paragraph(codeText(child.textContent ?? ''));
    } else if (BLOCKS.has(tag)) {
      flush();
      walk(child, out);
    } else {
      inline += textOf(child);
    }
  }
  flush();
}

/**
 * Sections of an HTML fragment, walked from its `<body>` without Readability. With a `title`, the
 * fragment's headings sit under it (it is the level-1 heading; Readability takes the page's own h1 out
 * as the title and turns the other h1s into h2s).
 */
function sectionsOfMarkup(html: string, title = ''): Section[] {
  const { document } = parseHTML(`<!doctype html><html><head></head><body>${html}</body></html>`);
  const out = new SectionBuilder();
  if (title.length > 0) out.heading(1, title);
  walk(document.body as unknown as DomNode, out);
  return out.sections();
}

/**
 * Sections of an HTML page: its readable main text as Mozilla Readability extracts it (navigation,
 * sidebars, scripts and styles left out), walked into sections by heading (h1-h6, path of at most
 * three levels as in src/knowledge/parse-document.ts), under the article's title as the top heading. When Readability finds no article (a short page,
 * a fragment), the whole `<body>` is walked with scripts, styles, navigation, header, footer, aside and
 * forms dropped. Never throws for any string; the result may be empty.
 */
export function parseHtml(source: string): Section[] {
  // A fragment (no <html> or <body>) gets a document around it, or the DOM would be its first element alone.
  const html = /<(?:html|body)[\s>]/i.test(source) ? source : `<!doctype html><html><head></head><body>${source}</body></html>`;
  let article: { content?: string | null; title?: string | null } | null = null;
  try {
    const { document } = parseHTML(html);
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 0 }).parse();
  } catch {
    article = null;
  }
  const content = article?.content;
  if (typeof content === 'string' && content.trim().length > 0) {
    const sections = sectionsOfMarkup(content, collapseWhitespace(article?.title ?? ''));
    if (sections.length > 0) return sections;
  }
  const { document } = parseHTML(html);
  const out = new SectionBuilder();
  const body = (document.body ?? document.documentElement) as unknown as DomNode | null;
  if (body) walk(body, out);
  return out.sections();
}

/** A DOCX file that is not one: the reason for the document's `error`. */
export class InvalidDocxError extends Error {}

/**
 * The zip-file object mammoth reads a Word document through (its `{file}` input, the shape of
 * mammoth/lib/zipfile.js): `read` inflates one entry, `exists` looks one up; `write` and
 * `toArrayBuffer` serve mammoth's style-map embedding, which conversion does not use.
 */
export interface DocxZipFile {
  exists(name: string): boolean;
  read(name: string, encoding?: string): Promise<string | Uint8Array>;
  write(name: string, contents: string): void;
  toArrayBuffer(): Promise<ArrayBuffer>;
}

/** JSZip's stream of one entry's content (`internalStream`: present at run time, not in JSZip's type declarations). */
interface EntryStream {
  on(event: 'data', listener: (chunk: Uint8Array) => void): EntryStream;
  on(event: 'end', listener: () => void): EntryStream;
  on(event: 'error', listener: (err: Error) => void): EntryStream;
  pause(): EntryStream;
  resume(): EntryStream;
}

/**
 * Inflates one zip entry, counting each piece against `budget` as JSZip's inflater produces it (pieces of
 * at most a few MB); past the limit the stream is paused for good and the bytes so far dropped, so a bomb
 * never holds more than the limit. Sizes declared in the zip directory play no part.
 *
 * @throws DocumentTooLargeError past the limit; what JSZip throws for a corrupt entry.
 */
function inflateEntry(entry: JSZip.JSZipObject, budget: ExpansionBudget): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const stream = (entry as unknown as { internalStream(type: 'uint8array'): EntryStream }).internalStream('uint8array');
    let chunks: Uint8Array[] = [];
    let size = 0;
    let settled = false;
    stream.on('data', (chunk) => {
      if (settled) return;
      try {
        budget.take(chunk.byteLength);
      } catch (err) {
        settled = true;
        chunks = [];
        stream.pause();
        reject(err as Error);
        return;
      }
      chunks.push(chunk);
      size += chunk.byteLength;
    });
    stream.on('error', (err) => {
      if (settled) return;
      settled = true;
      reject(err);
    });
    stream.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    stream.resume();
  });
}

/**
 * A {@link DocxZipFile} over `bytes` whose entries all draw on one `budget` of decompressed bytes. Only the
 * zip directory is read here (JSZip, the library mammoth itself uses, so both see the same entries);
 * entries are inflated when mammoth asks for them.
 *
 * @throws what JSZip throws for bytes that are not a zip archive.
 */
export async function boundedDocxZip(bytes: Uint8Array, budget: ExpansionBudget): Promise<DocxZipFile> {
  const zip = await JSZip.loadAsync(bytes);
  return {
    exists: (name) => zip.file(name) !== null,
    async read(name, encoding) {
      const entry = zip.file(name);
      if (entry === null) throw new Error(`the document has no part ${name}`);
      const data = await inflateEntry(entry, budget);
      if (encoding === 'base64') return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
      return encoding ? new TextDecoder(encoding).decode(data) : data;
    },
    write(name, contents) {
      zip.file(name, contents);
    },
    toArrayBuffer: () => zip.generateAsync({ type: 'arraybuffer' }),
  };
}

/** Images are not text: mammoth is told to leave them out, so their zip entries are never inflated. */
const NO_IMAGES = mammoth.images.imgElement(() => Promise.resolve({ src: '' }));

/**
 * Sections of a Word document (`.docx`): `mammoth` converts it to HTML (Heading 1-6 styles become
 * h1-h6, lists and tables kept), which is walked like HTML (without Readability: all of a Word document
 * is content). Every zip entry mammoth reads is inflated under one budget of `maxExpandedBytes`
 * decompressed bytes (PARLEY_INGEST_MAX_EXPANDED_BYTES), counted while inflating; images are skipped.
 *
 * @throws DocumentTooLargeError when the entries inflate to more than `maxExpandedBytes`.
 * @throws InvalidDocxError when the bytes are not a DOCX package (not a zip, or a zip without a Word
 *   document part), with mammoth's reason.
 */
export async function parseDocx(bytes: Uint8Array, maxExpandedBytes = DEFAULT_MAX_EXPANDED_BYTES): Promise<Section[]> {
  const budget = new ExpansionBudget(maxExpandedBytes, 'decompressed bytes');
  let html: string;
  try {
    const file = await boundedDocxZip(bytes, budget);
    // `{file}`: mammoth's input for an opened zip (mammoth/lib/unzip.js), not in its type declarations.
    const result = await mammoth.convertToHtml({ file } as unknown as Parameters<typeof mammoth.convertToHtml>[0], { convertImage: NO_IMAGES });
    html = result.value;
  } catch (err) {
    if (err instanceof DocumentTooLargeError) throw err;
    if (budget.exceeded) throw budget.exceeded;
    const reason = err instanceof Error ? err.message : String(err);
    throw new InvalidDocxError(`document is not a valid DOCX file: ${reason}`);
  }
  return sectionsOfMarkup(html);
}
