/** Knowledge-base document vocabulary (API.md "Knowledge bases"): defined once, zod first. */
import { z } from 'zod';
import { DOCUMENT_CONTENT_TYPES, DOCUMENT_ERROR_CODES } from './document-types.js';

/** `processing` until ingested; then `ready` (searchable) or `failed` (with an `error`). */
export const DocumentStatusSchema = z.enum(['processing', 'ready', 'failed']).meta({ id: 'DocumentStatus' });
export type DocumentStatus = z.infer<typeof DocumentStatusSchema>;

export { DOCX_CONTENT_TYPE, DOCUMENT_CONTENT_TYPES, DOCUMENT_ERROR_CODES, TEXT_CONTENT_TYPES, type DocumentContentType, type DocumentErrorCode } from './document-types.js';
/** The upload media type, as a zod schema. */
export const DocumentContentTypeSchema = z.enum(DOCUMENT_CONTENT_TYPES);
/** Why a document failed (`error_code`), as a zod schema. */
export const DocumentErrorCodeSchema = z.enum(DOCUMENT_ERROR_CODES).meta({ id: 'DocumentErrorCode' });
