/**
 * Shapes shared by ingestion (worker pool) and the store.
 */

import { DOCUMENT_CONTENT_TYPES, type DocumentContentType } from '../vocabulary/document-types.js';

export { DOCUMENT_CONTENT_TYPES, type DocumentContentType };
export { DOCX_CONTENT_TYPE } from '../vocabulary/document-types.js';

/** What the main thread sends to the ingestion worker. `content` is the raw upload. */
export interface IngestTask {
  title: string;
  contentType: DocumentContentType;
  content: Uint8Array | string;
}

/** One chunk of a document, ready to index. `ord` is 0-based document order; sizes in characters. */
export interface ChunkDraft {
  ord: number;
  /** Heading path of the section the chunk sits in, e.g. `Crypto > Class: Hash`; '' at top level. */
  heading: string;
  text: string;
  /** 1-based page number of a PDF chunk (the page its text starts on); null for formats without pages. */
  page: number | null;
}

/** What the worker returns: the chunks, or a failure message for the document's `error` field. */
export type IngestResult =
  | { ok: true; chunks: ChunkDraft[]; characters: number }
  | { ok: false; error: string };
