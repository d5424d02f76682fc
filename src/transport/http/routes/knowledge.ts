import type { z } from 'zod';
import { AppError } from '../../../errors/app-error.js';
import { DOCUMENT_CONTENT_TYPES, type DocumentContentType } from '../../../vocabulary/document.js';
import {
  DocumentAcceptedSchema, DocumentJsonSchema, DocumentQuery, DocumentSchema, EmptyQuery, ErrorSchema,
  KnowledgeBaseCreateSchema, KnowledgeBaseSchema, listOf, PageQuery, SearchQuery, SearchResultSchema,
} from '../schemas.js';
import { ACCESS } from '../../../runtime/services/access.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { parseJson, validate } from '../validate.js';
import { documentView, knowledgeBaseView, pageView } from '../views.js';

/** The media type of a Content-Type header value, lower-cased, without parameters. */
function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** `/v1/knowledge-bases` routes (API.md "Knowledge bases"). */
export function knowledgeRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'POST', path: '/v1/knowledge-bases', tag: 'Knowledge bases', summary: 'Create a knowledge base', access: ACCESS.manage,
      body: KnowledgeBaseCreateSchema, query: EmptyQuery,
      responses: [{ status: 201, description: 'The knowledge base', schema: KnowledgeBaseSchema }],
      async handle({ principal, body }: { principal: { orgId: string }; body: z.infer<typeof KnowledgeBaseCreateSchema> }) {
        const kb = await s.knowledgeBases.create(principal.orgId, body.name);
        return { kind: 'json', status: 201, body: knowledgeBaseView(kb) };
      },
    },
    {
      method: 'GET', path: '/v1/knowledge-bases', tag: 'Knowledge bases', summary: 'List knowledge bases', access: ACCESS.member, query: PageQuery,
      responses: [{ status: 200, description: 'Knowledge bases, newest first, each with its document count, chunk count and bytes', schema: listOf(KnowledgeBaseSchema, 'KnowledgeBaseList') }],
      async handle({ principal, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.knowledgeBases.list(principal.orgId, query), knowledgeBaseView) };
      },
    },
    {
      method: 'GET', path: '/v1/knowledge-bases/{kb_id}', tag: 'Knowledge bases', summary: 'Get a knowledge base with its counts', access: ACCESS.member, query: EmptyQuery,
      responses: [{ status: 200, description: 'The knowledge base', schema: KnowledgeBaseSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        return { kind: 'json', status: 200, body: knowledgeBaseView(await s.knowledgeBases.getWithStats(principal.orgId, params.kb_id!)) };
      },
    },
    {
      method: 'DELETE', path: '/v1/knowledge-bases/{kb_id}', tag: 'Knowledge bases', access: ACCESS.manage, query: EmptyQuery,
      summary: 'Delete a knowledge base with its documents and chunks; agents that used it no longer list it',
      responses: [{ status: 204, description: 'Deleted' }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        await s.knowledgeBases.delete(principal.orgId, params.kb_id!, (orgId, kbId) => s.agents.detachKnowledgeBase(orgId, kbId));
        return { kind: 'empty', status: 204 };
      },
    },
    {
      method: 'POST', path: '/v1/knowledge-bases/{kb_id}/documents', tag: 'Knowledge bases', access: ACCESS.manage,
      summary: 'Upload a document (raw text/plain, text/markdown, text/html, application/pdf or DOCX body with ?title=, or JSON {title, content, content_type} for the text formats)',
      body: 'raw', query: DocumentQuery,
      responses: [
        { status: 202, description: 'Accepted; ingestion runs in the background', schema: DocumentAcceptedSchema },
        { status: 413, description: 'Body larger than PARLEY_DOCUMENT_LIMIT_BYTES (raw) or PARLEY_BODY_LIMIT_BYTES (JSON)', schema: ErrorSchema },
        { status: 415, description: 'Unsupported content type', schema: ErrorSchema },
        { status: 429, description: 'rate_limited: the organization already has PARLEY_INGEST_MAX_PROCESSING_PER_ORG documents processing (see Retry-After)', schema: ErrorSchema },
      ],
      async handle({ principal, params, req, query }: { principal: { orgId: string }; params: Record<string, string>; req: { headers: Record<string, string>; body: Buffer | null }; query: z.infer<typeof DocumentQuery> }) {
        const type = mediaType(req.headers['content-type']);
        let upload;
        if (type === 'application/json') {
          if (req.body && req.body.length > s.config.bodyLimitBytes) throw new AppError('body_too_large', `JSON bodies are limited to ${s.config.bodyLimitBytes} bytes; upload large documents as raw text.`);
          const body = validate(DocumentJsonSchema, parseJson(req.body), 'body');
          upload = { title: body.title, contentType: body.content_type, content: body.content };
        } else if ((DOCUMENT_CONTENT_TYPES as readonly string[]).includes(type)) {
          if (!req.body || req.body.length === 0) throw new AppError('validation_failed', 'The document body is empty.', { errors: [{ path: 'body', message: 'empty document' }] });
          if (!query.title) throw new AppError('validation_failed', 'Pass the document title as ?title=.', { errors: [{ path: 'title', message: 'required for raw uploads' }] });
          // A view, not a copy: the body's memory moves on to the store's writer thread (transfer below).
          upload = { title: query.title, contentType: type as DocumentContentType, content: new Uint8Array(req.body.buffer, req.body.byteOffset, req.body.byteLength) };
        } else {
          throw new AppError('unsupported_content_type', `Content-Type must be one of ${[...DOCUMENT_CONTENT_TYPES, 'application/json'].join(', ')}.`);
        }
        const doc = await s.knowledgeBases.upload(principal.orgId, params.kb_id!, upload, { transfer: true });
        return { kind: 'json', status: 202, body: { id: doc.id, status: 'processing' } };
      },
    },
    {
      method: 'GET', path: '/v1/knowledge-bases/{kb_id}/documents', tag: 'Knowledge bases', summary: 'List documents', access: ACCESS.member, query: PageQuery,
      responses: [{ status: 200, description: 'Documents, newest first', schema: listOf(DocumentSchema, 'DocumentList') }],
      async handle({ principal, params, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.knowledgeBases.listDocuments(principal.orgId, params.kb_id!, query), documentView) };
      },
    },
    {
      method: 'GET', path: '/v1/knowledge-bases/{kb_id}/documents/{doc_id}', tag: 'Knowledge bases', summary: 'Get a document and its ingestion status', access: ACCESS.member, query: EmptyQuery,
      responses: [{ status: 200, description: 'The document', schema: DocumentSchema }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        const doc = await s.knowledgeBases.getDocument(principal.orgId, params.kb_id!, params.doc_id!);
        return { kind: 'json', status: 200, body: documentView(doc) };
      },
    },
    {
      method: 'DELETE', path: '/v1/knowledge-bases/{kb_id}/documents/{doc_id}', tag: 'Knowledge bases', summary: 'Delete a document and its chunks', access: ACCESS.manage, query: EmptyQuery,
      responses: [{ status: 204, description: 'Deleted' }, { status: 404, description: 'Not found', schema: ErrorSchema }],
      async handle({ principal, params }) {
        await s.knowledgeBases.deleteDocument(principal.orgId, params.kb_id!, params.doc_id!);
        return { kind: 'empty', status: 204 };
      },
    },
    {
      method: 'GET', path: '/v1/knowledge-bases/{kb_id}/search', tag: 'Knowledge bases', summary: 'Search the ready documents (bm25; fused with vector search when embeddings are configured)', access: ACCESS.member, query: SearchQuery,
      responses: [{ status: 200, description: 'Passages, best first', schema: SearchResultSchema }],
      async handle({ principal, params, query }: { principal: { orgId: string }; params: Record<string, string>; query: z.infer<typeof SearchQuery> }) {
        const passages = await s.knowledgeBases.search(principal.orgId, params.kb_id!, query.q, query.k);
        return { kind: 'json', status: 200, body: { data: passages } };
      },
    },
  ];
}
