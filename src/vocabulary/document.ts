/** Knowledge-base document vocabulary (API.md "Knowledge bases"): defined once, zod first. */
import { z } from 'zod';

/** `processing` until ingested; then `ready` (searchable) or `failed` (with an `error`). */
export const DocumentStatusSchema = z.enum(['processing', 'ready', 'failed']).meta({ id: 'DocumentStatus' });
export type DocumentStatus = z.infer<typeof DocumentStatusSchema>;

/** The media type of a Word (Office Open XML) document, `.docx`. */
export const DOCX_CONTENT_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** Media types a document may be uploaded as (API.md "Knowledge bases"). */
export const DOCUMENT_CONTENT_TYPES = ['text/plain', 'text/markdown', 'text/html', 'application/pdf', DOCX_CONTENT_TYPE] as const;
export const DocumentContentTypeSchema = z.enum(DOCUMENT_CONTENT_TYPES);
export type DocumentContentType = z.infer<typeof DocumentContentTypeSchema>;

/** The text media types: the only ones a JSON upload (`content` is a string) may name. PDF and DOCX are binary. */
export const TEXT_CONTENT_TYPES = ['text/plain', 'text/markdown', 'text/html'] as const;
