import { AppError } from '../../errors/app-error.js';
import { newId } from '../../ids/ids.js';
import type { KnowledgeSearch } from '../../knowledge/hybrid-search.js';
import type { DocumentUpload, KnowledgeService } from '../../knowledge/knowledge-service.js';
import type { Store } from '../../store/ports.js';
import type { ChunkHit, DocumentRecord, KnowledgeBaseRecord, KnowledgeBaseStats, Page, PageRequest } from '../../store/records.js';

/** A knowledge base with what it holds (API.md "Knowledge bases": the list and get responses). */
export type KnowledgeBaseWithStats = KnowledgeBaseRecord & KnowledgeBaseStats;

/**
 * Knowledge bases and their documents (API.md "Knowledge bases"), scoped by organization: another
 * organization's base or document is `not_found` (404). Uploads go through the ingestion service.
 */
export class KnowledgeBaseService {
  constructor(
    private readonly store: Store,
    private readonly knowledge: KnowledgeService,
    /** The search of the search endpoint: the same as turns use (bm25, or hybrid with embeddings). */
    private readonly searchFn: KnowledgeSearch,
  ) {}

  async create(orgId: string, name: string): Promise<KnowledgeBaseRecord> {
    const kb: KnowledgeBaseRecord = { id: newId('kb'), org_id: orgId, name, created_at: new Date().toISOString() };
    await this.store.knowledge.createBase(kb);
    return kb;
  }

  /** A page of the organization's knowledge bases, newest first, each with its counts (one grouped read per page). */
  async list(orgId: string, page: PageRequest): Promise<Page<KnowledgeBaseWithStats>> {
    const bases = await this.store.knowledge.listBases(orgId, page);
    const stats = await this.store.knowledge.baseStats(orgId, bases.data.map((kb) => kb.id));
    return { ...bases, data: bases.data.map((kb) => ({ ...kb, ...stats.get(kb.id)! })) };
  }

  /** The knowledge base; throws AppError `not_found`. */
  async get(orgId: string, kbId: string): Promise<KnowledgeBaseRecord> {
    const kb = await this.store.knowledge.getBase(orgId, kbId);
    if (!kb) throw new AppError('not_found', 'No such knowledge base.');
    return kb;
  }

  /** The knowledge base with its counts; throws AppError `not_found`. */
  async getWithStats(orgId: string, kbId: string): Promise<KnowledgeBaseWithStats> {
    const kb = await this.get(orgId, kbId);
    const stats = await this.store.knowledge.baseStats(orgId, [kb.id]);
    return { ...kb, ...stats.get(kb.id)! };
  }

  /**
   * Deletes the knowledge base with its documents and chunks, and takes it out of every agent of the
   * organization that used it (through `detach`, which keeps the agents' caches right). Throws AppError `not_found`.
   */
  async delete(orgId: string, kbId: string, detach: (orgId: string, kbId: string) => Promise<void>): Promise<void> {
    if (!(await this.store.knowledge.deleteBase(orgId, kbId))) throw new AppError('not_found', 'No such knowledge base.');
    await detach(orgId, kbId);
  }

  /**
   * Accepts a document: its record and content are durable when this resolves (so the 202 survives a
   * crash), and ingestion runs in the background. With `transfer`, a whole-buffer upload is moved to the
   * store instead of copied (the caller's array is detached). Throws AppError `not_found` for an unknown
   * base, `rate_limited` (429, `Retry-After`) when the organization is at its bound of documents processing.
   */
  async upload(orgId: string, kbId: string, upload: DocumentUpload, opts: { transfer?: boolean } = {}): Promise<DocumentRecord> {
    return this.knowledge.upload(await this.get(orgId, kbId), upload, opts);
  }

  async listDocuments(orgId: string, kbId: string, page: PageRequest): Promise<Page<DocumentRecord>> {
    const kb = await this.get(orgId, kbId);
    return this.store.knowledge.listDocuments(orgId, kb.id, page);
  }

  /** The document; throws AppError `not_found`. */
  async getDocument(orgId: string, kbId: string, docId: string): Promise<DocumentRecord> {
    const doc = await this.store.knowledge.getDocument(orgId, kbId, docId);
    if (!doc) throw new AppError('not_found', 'No such document.');
    return doc;
  }

  /** Deletes the document and its chunks; throws AppError `not_found`. */
  async deleteDocument(orgId: string, kbId: string, docId: string): Promise<void> {
    if (!(await this.store.knowledge.deleteDocument(orgId, kbId, docId))) throw new AppError('not_found', 'No such document.');
  }

  /** Search over the base's ready documents (bm25, or hybrid with embeddings), best first, at most `k` hits. */
  async search(orgId: string, kbId: string, query: string, k: number): Promise<ChunkHit[]> {
    const kb = await this.get(orgId, kbId);
    return this.searchFn(orgId, [kb.id], query, k);
  }
}
