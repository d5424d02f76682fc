/**
 * Document parsing for knowledge-base ingestion: turns a Markdown or plain-text document into
 * sections of clean, readable paragraphs (markup stripped) under their heading path.
 *
 * Runs inside the ingestion worker (src/knowledge/ingest.worker.ts); pure and synchronous.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Lexer as MarkedLexer, Token, Tokens } from 'marked';
import * as md4w from 'md4w';
import type { DocumentContentType } from './types.js';

/**
 * One heading's worth of a document.
 *
 * - `heading`: the heading path, e.g. `Crypto > Class: Hash > hash.update(data)`: at most
 *   {@link MAX_HEADING_DEPTH} levels joined with {@link HEADING_SEPARATOR}; deeper paths keep the
 *   top-level heading and the two deepest ones. `''` for text before the first heading and for
 *   plain-text documents.
 * - `paragraphs`: plain-text paragraphs (no Markdown syntax), each non-empty and trimmed. Prose
 *   paragraphs are on one line (soft line breaks become spaces); lists, tables and code blocks keep
 *   one line per item / row / code line.
 * - `page`: the 1-based page the section's text is on (PDF only: a section never spans pages);
 *   absent for formats without pages.
 */
export interface Section {
  heading: string;
  paragraphs: string[];
  page?: number;
}

/** Separator between the levels of a {@link Section.heading} path. */
export const HEADING_SEPARATOR = ' > ';

/** Deepest heading path kept on a section (levels). */
export const MAX_HEADING_DEPTH = 3;

/**
 * Deepest container nesting a Markdown document may have, levels. md4c itself does not recurse, but the
 * walk of its tree here does, one call per level, and `marked` (the fallback) lexes block quotes and
 * lists recursively: at 10,000 levels it overflows the stack, and 2,000 levels of quotes or lists on
 * separate lines (a few MB) exhausted a 1 GB heap. At 64 levels a 7 MB document costs about what a
 * flat one does (measured with marked: 4.5 to 9.3 s against 3.2 to 6.4 s).
 */
export const MAX_MARKDOWN_NESTING = 64;

const SPACE = 0x20;
const TAB = 0x09;

/**
 * The deepest container nesting of Markdown `text`, estimated line by line in one linear pass with no
 * recursion. A line's depth is the number of block-quote (`>`) and list markers (`-`, `*`, `+` or
 * 1 to 9 digits and `.`/`)`, each followed by a space, a tab or the line end; CommonMark 0.31
 * sections 5.1 to 5.3) that open it, plus, when it opens a list item, half its leading indentation in
 * columns (a nested item is indented under its parent; tabs stop at multiples of 4). Lines inside
 * fenced code blocks (up to 3 spaces, then 3 or more backticks or tildes) do not count. This is an
 * upper bound of what md4c and `marked` nest, not an exact count: a thematic break `- - -` counts 3.
 *
 * @param stopAbove the scan returns as soon as the depth found exceeds this.
 * @returns depth in levels, an integer >= 0.
 */
export function markdownNestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  const n = text.length;
  let deepest = 0;
  let fence = 0; // char code of the open fence (backtick or tilde), 0 outside a fence
  let fenceLength = 0;
  for (let start = 0; start < n;) {
    let eol = text.indexOf('\n', start);
    if (eol < 0) eol = n;
    let p = start;
    let indent = 0;
    for (; p < eol; p++) {
      const c = text.charCodeAt(p);
      if (c === SPACE) indent++;
      else if (c === TAB) indent += 4 - (indent % 4);
      else break;
    }
    const c0 = text.charCodeAt(p);
    if (indent <= 3 && (c0 === 0x60 || c0 === 0x7e)) {
      let run = p;
      while (run < eol && text.charCodeAt(run) === c0) run++;
      if (run - p >= 3) {
        if (fence === 0) { fence = c0; fenceLength = run - p; } else if (fence === c0 && run - p >= fenceLength) fence = 0;
        start = eol + 1;
        continue;
      }
    }
    if (fence !== 0) { start = eol + 1; continue; }
    let depth = 0;
    let opensItem = false;
    while (p < eol && depth <= stopAbove) {
      const c = text.charCodeAt(p);
      if (c === SPACE || c === TAB) { p++; continue; }
      const afterIsGap = (at: number) => at >= eol || text.charCodeAt(at) === SPACE || text.charCodeAt(at) === TAB || text.charCodeAt(at) === 0x0d;
      if (c === 0x3e) { depth++; p++; continue; } // >
      if ((c === 0x2d || c === 0x2a || c === 0x2b) && afterIsGap(p + 1)) { depth++; opensItem = true; p++; continue; } // - * +
      let q = p;
      while (q < eol && q - p < 9 && text.charCodeAt(q) >= 0x30 && text.charCodeAt(q) <= 0x39) q++;
      const d = text.charCodeAt(q);
      if (q > p && (d === 0x2e || d === 0x29) && afterIsGap(q + 1)) { depth++; opensItem = true; p = q + 1; continue; } // 1. 1)
      break;
    }
    if (opensItem && depth <= stopAbove) depth += indent >> 1;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > stopAbove) return deepest;
    }
    start = eol + 1;
  }
  return deepest;
}

/**
 * Parses a document into sections of plain-text paragraphs.
 *
 * - `text/markdown`: parsed by md4c (CommonMark with GFM tables, strikethrough and task lists; the
 *   `md4w` WebAssembly build, see {@link parseMarkdownMd4c}), or by `marked` (GFM) for the rare document
 *   md4w cannot return as a tree. Each heading starts a section; paragraphs, block
 *   quotes (their inner blocks), lists (one paragraph per list, one line per item), fenced/indented
 *   code (one paragraph, lines kept as is), tables (one paragraph, one line per row, cells joined
 *   with ` | `) become paragraphs. Inline markup is reduced to its text: emphasis markers, link
 *   targets and backticks are dropped (code-span text is kept), HTML entities are decoded.
 *   HTML comments and inline HTML tags are dropped; an HTML block that still holds text once its tags
 *   are removed (such as a `<table>`) is kept as text, one line per table row.
 * - `text/plain`: one section with heading `''`; paragraphs split on blank lines, whitespace
 *   inside a paragraph collapsed to single spaces.
 *
 * Sections without paragraphs are omitted, so the result may be empty. `\r\n` line ends are
 * accepted. Never throws for any string input.
 */
export function parseDocument(content: string, contentType: Extract<DocumentContentType, 'text/plain' | 'text/markdown'>): Section[] {
  const text = content.replace(/\r\n?/g, '\n');
  if (contentType === 'text/markdown') return parseMarkdownMd4c(text) ?? parseMarkdownMarked(text);
  return parsePlainText(text);
}

function parsePlainText(text: string): Section[] {
  const paragraphs = text
    .split(/\n[ \t\f\v]*\n/)
    .map(collapseWhitespace)
    .filter((p) => p.length > 0);
  return paragraphs.length > 0 ? [{ heading: '', paragraphs }] : [];
}

/** md4c node types (md4w's `NodeType`) that {@link parseMarkdownMd4c} tells apart. */
const MD = {
  QUOTE: 1, UL: 2, OL: 3, LI: 4, HR: 5, CODE_BLOCK: 7, HTML: 8, P: 9, TABLE: 10, THEAD: 11, TBODY: 12, TR: 13,
  H1: 21, H6: 26, CODE_SPAN: 34, IMG: 33,
} as const;

/**
 * A node of md4w's JSON tree. Text is a string, HTML-escaped except in code blocks and raw HTML (whose
 * children are strings only); an element's `children` is absent when it has none (a rule, an empty item).
 */
type MdNode = string | MdElement;
interface MdElement {
  type: number;
  props?: { start?: number; alt?: string };
  children?: MdNode[];
}

const NO_CHILDREN: MdNode[] = [];

/**
 * md4c parse flags: CommonMark plus the GFM extensions marked's `gfm` has (tables, strikethrough,
 * task lists); autolinks are left out, their text is the same either way.
 */
const MD4C_FLAGS = md4w.ParseFlags.TABLES | md4w.ParseFlags.STRIKETHROUGH | md4w.ParseFlags.TASKLISTS;

/** md4w's renderer entry (exported by the package, not declared in its types); renderer 2 is JSON. */
const renderToString = (md4w as unknown as { renderToString(input: string, options: { parseFlags: number }, renderer: number): string }).renderToString;

/** A compiled WebAssembly module, as md4w's `initSync` takes it. */
type Md4cModule = Parameters<typeof md4w.initSync>[0];

let md4cModule: Md4cModule | undefined;

/**
 * Compiles md4w's WebAssembly parser (the 60 KB `md4w-small.wasm` of the package) on first use, once
 * per thread, synchronously: a few ms. The file is found next to the package's entry module.
 */
function loadMd4c(): Md4cModule {
  if (md4cModule !== undefined) return md4cModule;
  const wasm = new URL('md4w-small.wasm', import.meta.resolve('md4w'));
  // WebAssembly is a global of Node, but the build's TypeScript libs (ES2023, no DOM) do not declare it.
  const { Module } = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => Md4cModule } }).WebAssembly;
  md4cModule = new Module(readFileSync(fileURLToPath(wasm)));
  md4w.initSync(md4cModule);
  return md4cModule;
}

/**
 * Text longer than this (UTF-16 code units) is followed by a fresh md4w instance. WebAssembly memory
 * only grows, and lies outside the worker's heap limit (PARLEY_INGEST_MEMORY_MB): a 10 MB document
 * grew it by 35-60 MB (measured: RSS after GC), which the old instance would keep until the worker stops.
 */
export const MD4C_RESET_AFTER_CHARS = 1_000_000;

/** C0 control characters other than tab and line ends: md4w writes them into its JSON unescaped. */
// eslint-disable-next-line no-control-regex
const JSON_BREAKING_CONTROLS = /[\u0001-\u0008\u000b\u000c\u000e-\u001f]/g;

/**
 * Parses Markdown `text` (line ends already `\n`) with md4c, the C CommonMark parser compiled to
 * WebAssembly (md4w): linear time, and no JIT warm-up, so a fresh ingestion worker parses at nearly its
 * steady speed (on half the Node.js API docs in a new thread: 204-258 ms against marked's 455, warm
 * 106-133 against 210). The sections are those of {@link parseMarkdownMarked}: the same on all 8,113
 * paragraphs of those docs.
 *
 * Returns undefined when md4c fails (a trap in the WebAssembly) or its tree cannot be read; the caller
 * then parses the document with marked. md4w's JSON writer (0.2.7) writes an image whose alt text holds
 * markup as several strings (unreadable JSON). It also drops the opening quote of a link's `title`,
 * which is repaired here, and writes C0 control characters unescaped, so they become spaces first (they
 * carry no text).
 */
export function parseMarkdownMd4c(text: string): Section[] | undefined {
  const module = loadMd4c();
  let json: string;
  try {
    json = renderToString(text.replace(JSON_BREAKING_CONTROLS, ' '), { parseFlags: MD4C_FLAGS }, 2);
  } catch {
    // A trap inside the WebAssembly (its memory could not grow) may leave the instance half-way: start a
    // fresh one, and let marked try the document.
    md4w.initSync(module);
    return undefined;
  }
  if (text.length > MD4C_RESET_AFTER_CHARS) md4w.initSync(module);
  // A quote inside a JSON string is escaped, so an unescaped `"title":` is always the key.
  if (json.includes('"title":')) json = json.replace(/"title":(?!")/g, '"title":"');
  try {
    return md4cSections(JSON.parse(json) as MdElement[]);
  } catch {
    return undefined;
  }
}

/** Sections of md4c's top-level blocks, as {@link parseMarkdownMarked} builds them from marked's tokens. */
function md4cSections(blocks: MdElement[]): Section[] {
  const sections = new SectionBuilder();
  for (const block of blocks) {
    if (isMdHeading(block)) sections.heading(block.type - MD.H1 + 1, mdInlineText(block.children));
    else mdBlockToParagraphs(block, sections.push);
  }
  return sections.finish();
}

/**
 * Collects sections in document order: each heading starts one, under the heading path of the levels above
 * it; paragraphs are trimmed and empty ones dropped; sections without paragraphs are left out.
 */
class SectionBuilder {
  private readonly sections: Section[] = [];
  private readonly stack: string[] = [];
  private current: Section = { heading: '', paragraphs: [] };

  /** Starts the section of a heading of `depth` (1 to 6) whose inline text is `text`. */
  heading(depth: number, text: string): void {
    if (this.current.paragraphs.length > 0) this.sections.push(this.current);
    this.stack.length = depth;
    this.stack[depth - 1] = collapseWhitespace(text);
    this.current = { heading: headingPath(this.stack), paragraphs: [] };
  }

  /** Adds a paragraph to the current section (bound: it is handed to the block walkers as a callback). */
  readonly push = (paragraph: string): void => {
    const trimmed = paragraph.trim();
    if (trimmed.length > 0) this.current.paragraphs.push(trimmed);
  };

  finish(): Section[] {
    if (this.current.paragraphs.length > 0) this.sections.push(this.current);
    return this.sections;
  }
}

function isMdHeading(node: MdElement): boolean {
  return node.type >= MD.H1 && node.type <= MD.H6;
}

/** Emits the plain-text paragraph(s) of one md4c block, as {@link blockToParagraphs} does for marked. */
function mdBlockToParagraphs(node: MdElement, push: (paragraph: string) => void): void {
  const children = node.children ?? NO_CHILDREN;
  switch (node.type) {
    case MD.CODE_BLOCK:
      push(codeText(children.join('')));
      return;
    case MD.QUOTE:
      for (const child of children as MdElement[]) mdBlockToParagraphs(child, push);
      return;
    case MD.UL:
    case MD.OL:
      push(mdListLines(node).join('\n'));
      return;
    case MD.TABLE:
      push(mdTableLines(children as MdElement[]).join('\n'));
      return;
    case MD.HTML:
      push(htmlBlockText(children.join('')));
      return;
    default: // paragraphs and headings; a rule has no children
      push(collapseWhitespace(mdInlineText(children)));
  }
}

/** Block types a list item holds besides its inline content (md4c puts a tight item's text in no paragraph). */
const MD_ITEM_BLOCKS: ReadonlySet<number> = new Set([MD.P, MD.QUOTE, MD.UL, MD.OL, MD.CODE_BLOCK, MD.TABLE, MD.HR]);

/**
 * Whether a child of a list item is a block. Raw HTML is a block when md4w ends it with a line end of
 * its own (`["<div>x</div>", "\n"]`); inline HTML is one string (a hard break is the one string `"<br>\n"`).
 */
function isMdItemBlock(node: MdNode): node is MdElement {
  if (typeof node === 'string') return false;
  if (node.type === MD.HTML) return (node.children?.length ?? 0) > 1 && node.children?.[node.children.length - 1] === '\n';
  return MD_ITEM_BLOCKS.has(node.type) || isMdHeading(node);
}

/** One line per list item (nested lists and code flattened after their item); ordered items keep their number. */
function mdListLines(list: MdElement): string[] {
  const lines: string[] = [];
  const start = list.props?.start ?? 1;
  (list.children as MdElement[]).forEach((item, index) => {
    const own: string[] = [];
    const nested: string[] = [];
    let inline: MdNode[] = [];
    for (const child of item.children ?? NO_CHILDREN) {
      if (!isMdItemBlock(child)) {
        inline.push(child);
        continue;
      }
      own.push(mdInlineText(inline));
      inline = [];
      if (child.type === MD.UL || child.type === MD.OL) nested.push(...mdListLines(child));
      else if (child.type === MD.CODE_BLOCK) nested.push(codeText((child.children ?? NO_CHILDREN).join('')));
      else mdBlockToParagraphs(child, (p) => own.push(p));
    }
    own.push(mdInlineText(inline));
    const text = collapseWhitespace(own.join(' '));
    if (text.length > 0) lines.push(list.type === MD.OL ? `${start + index}. ${text}` : text);
    for (const line of nested) if (line.length > 0) lines.push(line);
  });
  return lines;
}

/** One line per table row (head and body), cells joined with ` | `; rows without text are dropped. */
function mdTableLines(parts: MdElement[]): string[] {
  const lines: string[] = [];
  for (const part of parts) {
    for (const row of part.children as MdElement[]) {
      const line = (row.children as MdElement[]).map((cell) => collapseWhitespace(mdInlineText(cell.children))).join(' | ');
      if (line.replace(/[|\s]/g, '').length > 0) lines.push(line);
    }
  }
  return lines;
}

/**
 * Plain text of inline md4c nodes: markup dropped, link targets dropped, code spans kept verbatim, inline
 * HTML tags dropped (a hard break, which md4w writes as `<br>`, becomes a space), entities decoded.
 */
function mdInlineText(children: MdNode[] | undefined): string {
  let out = '';
  let run = '';
  for (const child of children ?? NO_CHILDREN) {
    if (typeof child === 'string') {
      run += child;
      continue;
    }
    out += cleanText(run);
    run = '';
    const inner = child.children ?? NO_CHILDREN;
    switch (child.type) {
      case MD.CODE_SPAN:
        out += decodeEntities(inner.join(''));
        break;
      case MD.HTML:
        // Tags are dropped as marked drops them; a hard break (written `<br>` by md4w) is a space.
        if (/^<br\b/i.test(inner.join(''))) out += ' ';
        break;
      case MD.IMG:
        out += cleanText(child.props?.alt ?? '');
        break;
      default:
        out += mdInlineText(inner);
    }
  }
  return out + cleanText(run);
}

/**
 * Characters that can start an inline token in marked's GFM inline grammar and change the text we keep:
 * escapes (`\\`), inline HTML and autolinks (`<`), links, images and reference links (`[`), emphasis
 * (`*`, `_`), code spans (`` ` ``) and strikethrough (`~`). Text without any of them lexes to plain text
 * tokens (bare URLs and e-mail addresses become links whose text is themselves; hard breaks become
 * whitespace, which is collapsed anyway), so it is not lexed.
 */
const INLINE_MARKUP = /[\\<[*_`~]/;

let lexerClass: typeof MarkedLexer | undefined;

/**
 * marked's `Lexer`, loaded on first use: marked is only the fallback of md4c (and the reference of the
 * tests), and importing it costs each new ingestion worker about 14 ms of CPU (measured in a fresh
 * worker thread), which a worker that never falls back need not pay. The parse is synchronous, so the
 * ES module is loaded with `require` (require(esm): Node >= 20.19, package.json `engines`).
 */
function markedLexer(): typeof MarkedLexer {
  lexerClass ??= (createRequire(import.meta.url)('marked') as { Lexer: typeof MarkedLexer }).Lexer;
  return lexerClass;
}

/**
 * Lexes `text` (line ends already `\n`) as GFM with marked, like `Lexer.lex`, except that inline
 * content without {@link INLINE_MARKUP} becomes one plain text token instead of going through marked's
 * inline lexer: the same sections out as with `Lexer.lex` (compared on the Node.js API docs and fuzzed input),
 * with about 10% less parse time on those docs (warm, one thread: 185-210 ms against 205-300 ms).
 */
function lexMarkdown(text: string): Token[] {
  const lexer = new (markedLexer())({ gfm: true });
  // marked keeps the inline work of blockTokens in `inlineQueue` (typed private; `lex` drains it the
  // same way). marked is pinned; should a version drop the queue, lex the usual way.
  const queued = lexer as unknown as { inlineQueue?: Array<{ src: string; tokens: Token[] }> };
  if (!Array.isArray(queued.inlineQueue)) return lexer.lex(text);
  const tokens = lexer.blockTokens(text, lexer.tokens);
  for (const pending of queued.inlineQueue) {
    if (INLINE_MARKUP.test(pending.src)) lexer.inlineTokens(pending.src, pending.tokens);
    else pending.tokens.push({ type: 'text', raw: pending.src, text: pending.src });
  }
  queued.inlineQueue = [];
  return tokens;
}

/**
 * Parses Markdown `text` (line ends already `\n`) with marked (GFM) into sections, as
 * {@link parseDocument} describes: the fallback of {@link parseMarkdownMd4c}, and its reference in tests.
 * Never throws for any string input of at most {@link MAX_MARKDOWN_NESTING} levels of nesting.
 */
export function parseMarkdownMarked(text: string): Section[] {
  const sections = new SectionBuilder();
  for (const token of lexMarkdown(text)) {
    if (token.type === 'heading') {
      const heading = token as Tokens.Heading;
      sections.heading(Math.min(Math.max(heading.depth, 1), 6), inlineText(heading.tokens));
    } else {
      blockToParagraphs(token, sections.push);
    }
  }
  return sections.finish();
}

/**
 * Path of a heading stack (`stack[d]` is the heading of depth d + 1): the non-empty levels joined with
 * {@link HEADING_SEPARATOR}, the first and the last two when deeper than {@link MAX_HEADING_DEPTH}.
 */
export function headingPath(stack: string[]): string {
  const levels: string[] = [];
  for (const level of stack) if (level !== undefined && level.length > 0) levels.push(level);
  if (levels.length > MAX_HEADING_DEPTH) {
    const first = levels[0] ?? '';
    return [first, ...levels.slice(levels.length - (MAX_HEADING_DEPTH - 1))].join(HEADING_SEPARATOR);
  }
  return levels.join(HEADING_SEPARATOR);
}

/** Emits the plain-text paragraph(s) of one block-level token (headings are handled by the caller). */
function blockToParagraphs(token: Token, push: (paragraph: string) => void): void {
  switch (token.type) {
    case 'space':
    case 'hr':
    case 'def':
      return;
    case 'heading':
    case 'paragraph':
      push(collapseWhitespace(inlineText((token as Tokens.Paragraph).tokens)));
      return;
    case 'text': {
      const t = token as Tokens.Text;
      push(collapseWhitespace(t.tokens ? inlineText(t.tokens) : decodeEntities(t.text)));
      return;
    }
    case 'code':
      push(codeText((token as Tokens.Code).text));
      return;
    case 'blockquote':
      for (const child of (token as Tokens.Blockquote).tokens) blockToParagraphs(child, push);
      return;
    case 'list':
      push(listLines(token as Tokens.List).join('\n'));
      return;
    case 'table':
      push(tableLines(token as Tokens.Table).join('\n'));
      return;
    case 'html':
      push(htmlBlockText((token as Tokens.HTML).text));
      return;
    default: {
      const generic = token as Tokens.Generic;
      if (Array.isArray(generic.tokens)) push(collapseWhitespace(inlineText(generic.tokens as Token[])));
      else if (typeof generic.text === 'string') push(collapseWhitespace(decodeEntities(generic.text)));
    }
  }
}

/** One line per list item (nested lists flattened after their item); ordered items keep their number. */
function listLines(list: Tokens.List): string[] {
  const lines: string[] = [];
  const start = typeof list.start === 'number' ? list.start : 1;
  list.items.forEach((item, index) => {
    const own: string[] = [];
    const nested: string[] = [];
    for (const child of item.tokens) {
      if (child.type === 'list') {
        nested.push(...listLines(child as Tokens.List));
      } else if (child.type === 'code') {
        nested.push(codeText((child as Tokens.Code).text));
      } else if (child.type !== 'checkbox') {
        blockToParagraphs(child, (p) => own.push(p));
      }
    }
    const text = collapseWhitespace(own.join(' '));
    if (text.length > 0) lines.push(list.ordered ? `${start + index}. ${text}` : text);
    lines.push(...nested.filter((l) => l.length > 0));
  });
  return lines;
}

function tableLines(table: Tokens.Table): string[] {
  const row = (cells: Tokens.TableCell[]): string =>
    cells.map((cell) => collapseWhitespace(inlineText(cell.tokens))).join(' | ');
  const lines = [row(table.header), ...table.rows.map(row)];
  return lines.filter((line) => line.replace(/[|\s]/g, '').length > 0);
}

/** Code block text: lines kept, trailing spaces and leading/trailing blank lines removed. */
export function codeText(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/^\n+|\n+$/g, '');
}

/**
 * Text of a block of raw HTML: comments dropped, tags removed, entities decoded; table rows
 * (`</tr>`) and block ends become line breaks and table cells are joined with ` | `.
 * Returns '' for markup without text (comments, anchors).
 */
function htmlBlockText(html: string): string {
  const CELL = '\u0001';
  const withoutComments = html.replace(/<!--[\s\S]*?(?:-->|$)/g, ' ');
  if (!/[^\s]/.test(withoutComments.replace(/<[^>]*>/g, ''))) return '';
  const marked = withoutComments
    .replace(/\s+/g, ' ')
    .replace(/<\/t[dh]\s*>/gi, CELL)
    .replace(/<\/(?:tr|p|div|li|h[1-6]|pre|table|thead|tbody|blockquote|dd|dt)\s*>|<br\s*\/?>/gi, '\n')
    .replace(/<\/?(?:a|abbr|b|code|em|i|kbd|mark|q|s|samp|small|span|strong|sub|sup|u|var)\b[^>]*>/gi, '')
    .replace(/<[^>]*>/g, ' ');
  const lines: string[] = [];
  for (const rawLine of decodeEntities(marked).split('\n')) {
    const cells = rawLine
      .split(CELL)
      .map(collapseWhitespace)
      .filter((c) => c.length > 0);
    if (cells.length > 0) lines.push(cells.join(' | '));
  }
  return lines.join('\n');
}

/** Plain text of inline tokens: markup dropped, link targets dropped, code spans kept verbatim. */
function inlineText(tokens: Token[] | undefined): string {
  if (!tokens) return '';
  let out = '';
  for (const token of tokens) {
    switch (token.type) {
      case 'text': {
        const t = token as Tokens.Text;
        out += t.tokens && t.tokens.length > 0 ? inlineText(t.tokens) : cleanText(t.text);
        break;
      }
      case 'escape':
        out += (token as Tokens.Escape).text;
        break;
      case 'codespan':
        out += (token as Tokens.Codespan).text;
        break;
      case 'br':
        out += ' ';
        break;
      case 'html':
      case 'checkbox':
        break;
      case 'image':
        out += cleanText((token as Tokens.Image).text);
        break;
      case 'link':
      case 'strong':
      case 'em':
      case 'del':
        out += inlineText((token as Tokens.Link).tokens);
        break;
      default: {
        const generic = token as Tokens.Generic;
        if (Array.isArray(generic.tokens)) out += inlineText(generic.tokens as Token[]);
        else if (typeof generic.text === 'string') out += cleanText(generic.text);
      }
    }
  }
  return out;
}

/** Raw inline text: entities decoded, unresolved reference links `[text][ref]` reduced to `text`. */
function cleanText(text: string): string {
  return decodeEntities(text.replace(/\[([^\]\n]+)\]\[[^\]\n]*\]/g, '$1'));
}

/** `text` with every run of whitespace made one space, trimmed. */
export function collapseWhitespace(text: string): string {
  // Most text has single spaces only: keep it as is rather than rebuild it one space at a time.
  if (!SPACE_RUN_OR_OTHER_WHITESPACE.test(text)) return text.trim();
  return text.replace(/\s+/g, ' ').trim();
}

/** Whitespace that {@link collapseWhitespace} changes inside a text: two or more in a row, or any but U+0020. */
const SPACE_RUN_OR_OTHER_WHITESPACE = /[^\S ]| {2}/;

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '\u2013',
  mdash: '\u2014',
  hellip: '\u2026',
  lsquo: '\u2018',
  rsquo: '\u2019',
  ldquo: '\u201c',
  rdquo: '\u201d',
  copy: '\u00a9',
  reg: '\u00ae',
  trade: '\u2122',
  times: '\u00d7',
  larr: '\u2190',
  rarr: '\u2192',
  bull: '\u2022',
  middot: '\u00b7',
};

/** Decodes numeric entities and a common subset of named ones; unknown entities are left as is. */
function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z][a-z0-9]{1,31});/gi, (whole, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      if (!Number.isFinite(code) || code <= 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return whole;
      return String.fromCodePoint(code);
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}
