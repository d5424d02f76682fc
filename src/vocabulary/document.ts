/** Knowledge-base document vocabulary (API.md "Knowledge bases"): defined once, zod first. */
import { z } from 'zod';

/** `processing` until ingested; then `ready` (searchable) or `failed` (with an `error`). */
export const DocumentStatusSchema = z.enum(['processing', 'ready', 'failed']).meta({ id: 'DocumentStatus' });
export type DocumentStatus = z.infer<typeof DocumentStatusSchema>;

/** Media types a document may be uploaded as (HTML, PDF and DOCX come with the knowledge-formats issue). */
export const DOCUMENT_CONTENT_TYPES = ['text/plain', 'text/markdown'] as const;
export const DocumentContentTypeSchema = z.enum(DOCUMENT_CONTENT_TYPES);
export type DocumentContentType = z.infer<typeof DocumentContentTypeSchema>;
