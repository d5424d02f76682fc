#!/usr/bin/env node
/**
 * Makes the binary test fixtures of the knowledge formats from the project's own documentation:
 *
 * - test/fixtures/operations.pdf: docs/operations.md laid out on several A4 pages with pdf-lib
 *   (headings in larger type, body text wrapped, code in Courier).
 * - test/fixtures/agents-and-models.docx: docs/agents-and-models.md as a Word document made with
 *   `docx` (Markdown headings become Heading 1-3 styles, list items bullets).
 *
 * Usage: `node scripts/make-fixtures.mjs` from the project root. The outputs are checked in next to
 * the tests that use them (test/integration/knowledge-formats.test.ts); rerun this script when the
 * source pages change and the tests' expectations should follow. The dates written into the files are
 * fixed, so the PDF is byte-for-byte reproducible (the DOCX is not: the `docx` package stamps the time).
 *
 * The Markdown handling here is only what a fixture needs (headings, fences, list items, paragraphs,
 * inline markup removed); the product parses Markdown with `marked`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';
import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'test', 'fixtures');
const FIXED_DATE = new Date('2026-01-01T00:00:00Z');

/** Blocks of a Markdown page: {kind: 'heading', depth, text} | {kind: 'paragraph'|'item'|'code', text}. */
function blocksOf(markdown) {
  const blocks = [];
  let paragraph = [];
  let code = null;
  const flush = () => {
    if (paragraph.length > 0) blocks.push({ kind: 'paragraph', text: inline(paragraph.join(' ')) });
    paragraph = [];
  };
  for (const line of markdown.split('\n')) {
    if (code !== null) {
      if (line.startsWith('```')) { blocks.push({ kind: 'code', text: code.join('\n') }); code = null; } else code.push(line);
      continue;
    }
    if (line.startsWith('```')) { flush(); code = []; continue; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) { flush(); blocks.push({ kind: 'heading', depth: heading[1].length, text: inline(heading[2]) }); continue; }
    const item = /^\s*(?:[-*+]|\d+\.)\s+(.*)$/.exec(line);
    if (item) { flush(); blocks.push({ kind: 'item', text: inline(item[1]) }); continue; }
    if (line.trim() === '' || line.startsWith('|')) { flush(); continue; }
    paragraph.push(line.trim());
  }
  flush();
  return blocks;
}

/** Inline Markdown reduced to its text: links to their text, code and emphasis markers dropped. */
function inline(text) {
  return text.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '').trim();
}

async function makePdf(markdown, title) {
  const pdf = await PDFDocument.create();
  pdf.setTitle(title);
  pdf.setCreator('scripts/make-fixtures.mjs');
  pdf.setProducer('pdf-lib');
  pdf.setCreationDate(FIXED_DATE);
  pdf.setModificationDate(FIXED_DATE);
  const regular = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  const mono = await pdf.embedFont(StandardFonts.Courier);
  const [width, height] = [595, 842];
  const margin = 56;
  let page = pdf.addPage([width, height]);
  let y = height - margin;
  const encodable = (font, text) => [...text].map((ch) => {
    try { font.encodeText(ch); return ch; } catch { return '?'; }
  }).join('');
  const line = (text, font, size, gapBefore = 0) => {
    y -= gapBefore;
    if (y - size < margin) { page = pdf.addPage([width, height]); y = height - margin; }
    page.drawText(encodable(font, text), { x: margin, y: y - size, size, font, color: rgb(0, 0, 0) });
    y -= size * 1.3;
  };
  const wrap = (text, font, size) => {
    const lines = [];
    let current = '';
    for (const word of text.split(/\s+/)) {
      const next = current ? `${current} ${word}` : word;
      if (current && font.widthOfTextAtSize(encodable(font, next), size) > width - 2 * margin) { lines.push(current); current = word; } else current = next;
    }
    if (current) lines.push(current);
    return lines;
  };
  for (const block of blocksOf(markdown)) {
    if (block.kind === 'heading') {
      const size = block.depth === 1 ? 20 : block.depth === 2 ? 15 : 13;
      line(block.text, bold, size, 14);
    } else if (block.kind === 'code') {
      block.text.split('\n').forEach((l, i) => line(l.length > 0 ? l.slice(0, 80) : ' ', mono, 9, i === 0 ? 8 : 0));
    } else {
      const text = block.kind === 'item' ? `- ${block.text}` : block.text;
      wrap(text, regular, 11).forEach((l, i) => line(l, regular, 11, i === 0 ? 8 : 0));
    }
  }
  return pdf.save({ useObjectStreams: true });
}

async function makeDocx(markdown, title) {
  const levels = [HeadingLevel.HEADING_1, HeadingLevel.HEADING_2, HeadingLevel.HEADING_3];
  const children = blocksOf(markdown).map((block) => {
    if (block.kind === 'heading') return new Paragraph({ text: block.text, heading: levels[Math.min(block.depth, 3) - 1] });
    if (block.kind === 'item') return new Paragraph({ text: block.text, bullet: { level: 0 } });
    if (block.kind === 'code') return new Paragraph({ children: [new TextRun({ text: block.text.replace(/\n/g, ' '), font: 'Courier New' })] });
    return new Paragraph({ text: block.text });
  });
  const doc = new Document({
    creator: 'scripts/make-fixtures.mjs', title, lastModifiedBy: 'scripts/make-fixtures.mjs',
    sections: [{ children }],
  });
  return Packer.toBuffer(doc);
}

mkdirSync(outDir, { recursive: true });
const pdf = await makePdf(readFileSync(join(root, 'docs', 'operations.md'), 'utf8'), 'Running Parley in production');
writeFileSync(join(outDir, 'operations.pdf'), pdf);
const docx = await makeDocx(readFileSync(join(root, 'docs', 'agents-and-models.md'), 'utf8'), 'Agents and models');
writeFileSync(join(outDir, 'agents-and-models.docx'), docx);
console.log(`test/fixtures/operations.pdf ${pdf.length} bytes, test/fixtures/agents-and-models.docx ${docx.length} bytes`);
