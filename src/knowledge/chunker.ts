/**
 * Chunking for knowledge-base ingestion: packs the paragraphs of parsed sections
 * (src/knowledge/parse-document.ts) into search-sized chunks that carry their heading path.
 *
 * Runs inside the ingestion worker; pure and synchronous. All sizes are in characters
 * (JavaScript string length, i.e. UTF-16 code units).
 */
import type { Section } from './parse-document.js';
import { sentenceSpans, splitSentences } from '../text/sentences.js';
import type { ChunkDraft } from './types.js';

/** Chunk sizing, in characters. */
export interface ChunkOptions {
  /** Paragraphs are accumulated into a chunk while it stays within this size. Default 1200. */
  targetChars?: number;
  /** Hard upper bound of a chunk's `text` length. Default 2000. */
  maxChars?: number;
  /** Upper bound of the sentences repeated from the previous chunk of the same section. Default 250. */
  overlapChars?: number;
}

/** Defaults of {@link ChunkOptions}, in characters. */
export const DEFAULT_CHUNK_OPTIONS: Readonly<Required<ChunkOptions>> = Object.freeze({
  targetChars: 1200,
  maxChars: 2000,
  overlapChars: 250,
});

/** A section shorter than this (characters) is merged into the next section's chunk when that section is its child. */
export const TINY_SECTION_CHARS = 200;

/** A piece of section text and the separator that goes before it when it follows other text in a chunk. */
interface Unit {
  text: string;
  sep: string;
}

/**
 * Splits sections into chunks.
 *
 * - A chunk holds text of one section only and carries that section's `heading`; the one exception
 *   is a tiny section (under {@link TINY_SECTION_CHARS} characters) directly followed by a child
 *   section (heading path extending it, or any heading after the `''` preamble): its text is
 *   prepended to the child's first chunk, which carries the child's heading.
 * - Paragraphs are joined with a blank line and accumulated while the chunk stays within
 *   `targetChars` (a chunk still under half of `targetChars` may take a paragraph up to `maxChars`).
 * - A paragraph longer than `maxChars` is split on sentence boundaries, then line breaks, then
 *   whitespace, and as a last resort cut at `maxChars`; its pieces are accumulated like paragraphs.
 * - Consecutive chunks of the same section overlap: a chunk after the first starts with the
 *   trailing whole sentences (at most `overlapChars` characters, fewer if needed to respect
 *   `maxChars`) of the previous chunk. There is no overlap across sections.
 * - A chunk carries its section's `page` (null when the section has none); the tiny-section merge
 *   above only joins sections of the same page.
 * - Every chunk's `text` is non-empty, trimmed and at most `maxChars` characters; `ord` counts
 *   from 0 in document order.
 *
 * @throws RangeError when an option is not a positive integer (overlapChars may be 0) or
 *   `targetChars > maxChars`.
 */
export function chunkSections(sections: Section[], opts: ChunkOptions = {}): ChunkDraft[] {
  const targetChars = opts.targetChars ?? DEFAULT_CHUNK_OPTIONS.targetChars;
  const maxChars = opts.maxChars ?? DEFAULT_CHUNK_OPTIONS.maxChars;
  const overlapChars = opts.overlapChars ?? DEFAULT_CHUNK_OPTIONS.overlapChars;
  for (const [name, value, min] of [
    ['targetChars', targetChars, 1],
    ['maxChars', maxChars, 1],
    ['overlapChars', overlapChars, 0],
  ] as const) {
    if (!Number.isInteger(value) || value < min) {
      throw new RangeError(`chunk option ${name} must be an integer >= ${min}, got ${String(value)}`);
    }
  }
  if (targetChars > maxChars) {
    throw new RangeError(`chunk option targetChars (${targetChars}) must not exceed maxChars (${maxChars})`);
  }

  const chunks: ChunkDraft[] = [];
  let carry: Unit[] = [];
  for (let i = 0; i < sections.length; i++) {
    const section = sections[i];
    if (!section) continue;
    const units = [...carry, ...sectionUnits(section.paragraphs, maxChars)];
    carry = [];
    if (units.length === 0) continue;
    const next = sections[i + 1];
    if (next && (next.page ?? null) === (section.page ?? null) && isChildHeading(section.heading, next.heading) && unitsLength(units) < TINY_SECTION_CHARS) {
      carry = units;
      continue;
    }
    for (const text of packUnits(units, targetChars, maxChars, overlapChars)) {
      chunks.push({ ord: chunks.length, heading: section.heading, text, page: section.page ?? null });
    }
  }
  return chunks;
}

function isChildHeading(parent: string, child: string): boolean {
  if (parent === '') return child !== '';
  return child.startsWith(parent + ' > ');
}

function unitsLength(units: Unit[]): number {
  let total = 0;
  units.forEach((u, i) => {
    total += u.text.length + (i > 0 ? u.sep.length : 0);
  });
  return total;
}

/** Units of a section: one per paragraph, or one per sentence (line, word, slice) of an over-long paragraph. */
function sectionUnits(paragraphs: string[], maxChars: number): Unit[] {
  const units: Unit[] = [];
  for (const raw of paragraphs) {
    const paragraph = raw.trim();
    if (paragraph.length === 0) continue;
    if (paragraph.length <= maxChars) {
      units.push({ text: paragraph, sep: '\n\n' });
      continue;
    }
    splitLong(paragraph, maxChars).forEach((piece, index) => {
      units.push(index === 0 ? { text: piece.text, sep: '\n\n' } : piece);
    });
  }
  return units;
}

/** Pieces of an over-long paragraph, each at most maxChars: sentences, then words, then slices. */
function splitLong(paragraph: string, maxChars: number): Unit[] {
  const pieces: Unit[] = [];
  for (const sentence of splitSentences(paragraph)) {
    if (sentence.text.length <= maxChars) {
      pieces.push(sentence);
      continue;
    }
    let first = true;
    for (const word of sentence.text.split(/[ \t]+/)) {
      if (word.length === 0) continue;
      const sep = first ? sentence.sep : ' ';
      first = false;
      if (word.length <= maxChars) {
        pieces.push({ text: word, sep });
        continue;
      }
      for (let offset = 0; offset < word.length; offset += maxChars) {
        pieces.push({ text: word.slice(offset, offset + maxChars), sep: offset === 0 ? sep : '' });
      }
    }
  }
  return pieces;
}

/** Packs units (each <= maxChars) into chunk texts, with sentence overlap between consecutive chunks. */
function packUnits(units: Unit[], targetChars: number, maxChars: number, overlapChars: number): string[] {
  const out: string[] = [];
  let current = '';
  let own = 0; // characters of current that are not overlap
  for (const unit of units) {
    if (current.length === 0) {
      current = unit.text.trimStart();
      own = unit.text.length;
      continue;
    }
    const combined = current.length + unit.sep.length + unit.text.length;
    if (combined <= targetChars || (combined <= maxChars && own < targetChars / 2)) {
      current += unit.sep + unit.text;
      own += unit.sep.length + unit.text.length;
      continue;
    }
    out.push(current);
    const budget = Math.min(overlapChars, maxChars - unit.text.length - unit.sep.length);
    const overlap = budget > 0 ? trailingSentences(current, budget) : '';
    current = overlap.length > 0 ? overlap + unit.sep + unit.text : unit.text.trimStart();
    own = unit.text.length;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * The longest suffix of `text` (an exact substring) made of whole sentences, at most `budget`
 * characters, that is not the whole text; '' when even the last sentence is longer than the budget.
 */
function trailingSentences(text: string, budget: number): string {
  // Only the tail is segmented; the first sentence of the window may be cut, so it is never used
  // (when the window is the whole text, using it would repeat the whole chunk).
  const windowStart = Math.max(0, text.length - budget * 2 - 200);
  const spans = sentenceSpans(text.slice(windowStart));
  let best = '';
  for (let i = spans.length - 1; i >= 1; i--) {
    const span = spans[i];
    if (!span) break;
    const suffix = text.slice(windowStart + span.start).trimStart();
    if (suffix.length > budget) break;
    best = suffix;
  }
  return best;
}
