/**
 * The document media types (API.md "Knowledge bases") as plain constants, without zod: the ingestion
 * worker imports these, and loading zod would cost each worker about 60 ms of CPU at start.
 * src/vocabulary/document.ts builds the zod schemas from them.
 */

/** The media type of a Word (Office Open XML) document, `.docx`. */
export const DOCX_CONTENT_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** Media types a document may be uploaded as (API.md "Knowledge bases"). */
export const DOCUMENT_CONTENT_TYPES = ['text/plain', 'text/markdown', 'text/html', 'application/pdf', DOCX_CONTENT_TYPE] as const;
export type DocumentContentType = (typeof DOCUMENT_CONTENT_TYPES)[number];

/** The text media types: the only ones a JSON upload (`content` is a string) may name. PDF and DOCX are binary. */
export const TEXT_CONTENT_TYPES = ['text/plain', 'text/markdown', 'text/html'] as const;

/**
 * Why a document failed: the `error_code` of a `failed` document (API.md "Knowledge bases", beside its
 * one-line `error`) and of the `document.failed` event. docs/knowledge-bases.md lists which reasons
 * each code covers.
 * - `document_too_large`: past the expansion limit (PARLEY_INGEST_MAX_EXPANDED_BYTES) or the memory
 *   limit of the parser (PARLEY_INGEST_MEMORY_MB).
 * - `ingestion_timeout`: parsing took longer than PARLEY_INGEST_TIMEOUT_MS.
 * - `invalid_document`: the file cannot be read as its format, or has no text to index.
 * - `embedding_failed`: the embedding model did not embed its chunks.
 * - `ingestion_failed`: anything else (the parser process failed, the upload was not kept across a restart).
 */
export const DOCUMENT_ERROR_CODES = ['document_too_large', 'ingestion_timeout', 'invalid_document', 'embedding_failed', 'ingestion_failed'] as const;
export type DocumentErrorCode = (typeof DOCUMENT_ERROR_CODES)[number];
