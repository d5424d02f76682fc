/**
 * Shapes shared by ingestion (worker pool) and the store.
 */

import { DOCUMENT_CONTENT_TYPES, type DocumentContentType, type DocumentErrorCode } from '../vocabulary/document-types.js';

export { DOCUMENT_CONTENT_TYPES, type DocumentContentType, type DocumentErrorCode };
export { DOCX_CONTENT_TYPE } from '../vocabulary/document-types.js';

/** What the main thread sends to the ingestion worker. `content` is the raw upload. */
export interface IngestTask {
  title: string;
  contentType: DocumentContentType;
  content: Uint8Array | string;
  /**
   * The expansion limit (PARLEY_INGEST_MAX_EXPANDED_BYTES): most bytes the document may decompress to and
   * most characters of text it may yield, each; default DEFAULT_MAX_EXPANDED_BYTES (src/knowledge/expansion-limit.ts).
   */
  maxExpandedBytes?: number;
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

/**
 * What the worker returns: the chunks, or a failure: its `code` (the document's `error_code`) and its
 * one-line reason (the document's `error`).
 */
export type IngestResult =
  | { ok: true; chunks: ChunkDraft[]; characters: number }
  | { ok: false; code: DocumentErrorCode; error: string };
