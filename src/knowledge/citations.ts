import type { Passage } from '../models/port.js';
import type { Citation } from '../vocabulary/turn.js';

const SNIPPET_CHARS = 240;

/** The first ~240 characters of `text`, cut at a word boundary, with an ellipsis when cut. */
export function snippetOf(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= SNIPPET_CHARS) return flat;
  const cut = flat.lastIndexOf(' ', SNIPPET_CHARS);
  return `${flat.slice(0, cut > 80 ? cut : SNIPPET_CHARS)}…`;
}

/**
 * Citations for a reply: the passages the model said it used (`used`, chunk ids, in that order) or,
 * when it does not say, every passage it was given, best first. A citation carries the passage's
 * `heading` path when it is not empty and its `page` when it has one (PDF).
 */
export function toCitations(passages: Passage[], used: string[] | undefined): Citation[] {
  const chosen = used === undefined ? passages : used.map((id) => passages.find((p) => p.chunk_id === id)).filter((p): p is Passage => p !== undefined);
  return chosen.map((p) => {
    const citation: Citation = { document_id: p.document_id, chunk_id: p.chunk_id, title: p.title, snippet: snippetOf(p.text), score: p.score };
    if (p.heading.length > 0) citation.heading = p.heading;
    if (typeof p.page === 'number') citation.page = p.page;
    return citation;
  });
}
