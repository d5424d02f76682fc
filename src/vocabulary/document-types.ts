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
