import { AppError } from '../errors/app-error.js';
import { newId } from '../ids/ids.js';
import type { Logger } from '../log/logger.js';
import type { EventBus } from '../events/event-bus.js';
import { Outbox } from '../events/outbox.js';
import type { Store } from '../store/ports.js';
import type { DocumentRecord, KnowledgeBaseRecord } from '../store/records.js';
import type { NewChunk } from '../store/records.js';
import { EmbeddingFailed, type ChunkEmbedder } from './chunk-embedder.js';
import type { IngestionPool } from './ingestion-pool.js';
import type { DocumentContentType } from './types.js';

/** A document upload: `content` is the raw body (bytes) or JSON `content` (string). */
export interface DocumentUpload {
  title: string;
  contentType: DocumentContentType;
  content: Uint8Array | string;
}

/**
 * Knowledge-base documents: records the upload as `processing`, hands parsing and chunking to the
 * worker pool, then stores the chunks (`ready`) or the reason (`failed`) and publishes
 * `document.ready` / `document.failed`. A bad document fails alone; the pool keeps serving.
 *
 * With an `embedder` (PARLEY_EMBEDDINGS_MODEL), the chunks are embedded between chunking and storing, in
 * batches with retries (src/knowledge/chunk-embedder.ts); a document whose chunks cannot be embedded
 * fails with `embedding failed: <reason>` (nothing of it is stored).
 */
export class KnowledgeService {
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly pool: IngestionPool,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    /** The webhook outbox: document.ready / document.failed are stored in the commit of the status. */
    private readonly outbox: Outbox = new Outbox(),
    /** Embeds chunks at ingestion; without it chunks are stored without vectors (bm25 search only). */
    private readonly embedder?: ChunkEmbedder,
  ) {}

  private failedEvents(doc: DocumentRecord, error: string, at: string) {
    return this.outbox.events(doc.org_id, [{ type: 'document.failed', data: { document_id: doc.id, knowledge_base_id: doc.knowledge_base_id, title: doc.title, error } }], at);
  }

  /** Creates the document record and starts ingestion; resolves with the `processing` record. */
  async upload(kb: KnowledgeBaseRecord, upload: DocumentUpload): Promise<DocumentRecord> {
    const now = new Date().toISOString();
    const bytes = typeof upload.content === 'string' ? Buffer.byteLength(upload.content) : upload.content.byteLength;
    const doc: DocumentRecord = {
      id: newId('doc'), org_id: kb.org_id, knowledge_base_id: kb.id, title: upload.title,
      content_type: upload.contentType, status: 'processing', error: null, chunk_count: 0, bytes,
      created_at: now, updated_at: now,
    };
    await this.store.knowledge.createDocument(doc, upload.content);
    const job = this.ingest(doc, upload).finally(() => this.inflight.delete(job));
    this.inflight.add(job);
    return doc;
  }

  /**
   * Start-up recovery: every document still `processing` (its ingestion was cut short by a crash or a
   * kill) is ingested again from its stored content, in the background, oldest first; one whose content
   * was never stored (accepted by an older version) is marked `failed` with a reason. Resolves with the
   * number of documents resumed and failed once they are scheduled (not ingested).
   */
  async resumePending(): Promise<{ resumed: number; failed: number }> {
    let resumed = 0;
    let failed = 0;
    for (const { document, content } of await this.store.knowledge.pendingDocuments()) {
      if (content === null) {
        const error = 'ingestion was interrupted and the upload was not kept; upload the document again';
        const at = new Date().toISOString();
        const events = this.failedEvents(document, error, at);
        await this.store.knowledge.failDocument(document.id, error, at, events);
        this.outbox.committed(events);
        this.bus.publish({ type: 'document.failed', org_id: document.org_id, data: { document_id: document.id, knowledge_base_id: document.knowledge_base_id, error } });
        failed++;
        continue;
      }
      const job = this.ingest(document, { title: document.title, contentType: document.content_type, content })
        .finally(() => this.inflight.delete(job));
      this.inflight.add(job);
      resumed++;
    }
    if (resumed + failed > 0) this.logger.warn({ resumed, failed }, 'documents left processing by an earlier run: ingesting them again');
    return { resumed, failed };
  }

  private async ingest(doc: DocumentRecord, upload: DocumentUpload): Promise<void> {
    const started = performance.now();
    let error: string;
    try {
      // The upload is stored already: its memory moves to the worker instead of being copied.
      const result = await this.pool.run({ title: upload.title, contentType: upload.contentType, content: upload.content }, { transfer: true });
      if (result.ok) {
        let chunks: NewChunk[] = result.chunks;
        if (this.embedder !== undefined) {
          try {
            chunks = await this.embedder.embedDocument(doc.title, result.chunks);
          } catch (err) {
            if (!(err instanceof EmbeddingFailed)) throw err;
            this.logger.warn({ document_id: doc.id, reason: err.message }, 'embedding failed: the document fails');
            throw new IngestFailure(`embedding failed: ${err.message}`);
          }
        }
        const at = new Date().toISOString();
        const events = this.outbox.events(doc.org_id, [{
          type: 'document.ready', data: { document_id: doc.id, knowledge_base_id: doc.knowledge_base_id, title: doc.title, chunk_count: chunks.length },
        }], at);
        const stored = await this.store.knowledge.completeDocument(doc.id, chunks, at, events);
        if (stored) {
          this.outbox.committed(events);
          this.logger.info({ document_id: doc.id, chunks: result.chunks.length, ms: Math.round(performance.now() - started) }, 'document ready');
          this.bus.publish({ type: 'document.ready', org_id: doc.org_id, data: { document_id: doc.id, knowledge_base_id: doc.knowledge_base_id, chunk_count: result.chunks.length } });
        }
        return;
      }
      error = result.error;
    } catch (err) {
      if (err instanceof IngestFailure) {
        error = err.message;
      } else {
        this.logger.error({ err, document_id: doc.id }, 'ingestion failed unexpectedly');
        error = 'ingestion failed unexpectedly';
      }
    }
    try {
      const at = new Date().toISOString();
      const events = this.failedEvents(doc, error, at);
      await this.store.knowledge.failDocument(doc.id, error, at, events);
      this.outbox.committed(events);
    } catch (err) {
      this.logger.error({ err, document_id: doc.id }, 'could not record the ingestion failure');
    }
    this.bus.publish({ type: 'document.failed', org_id: doc.org_id, data: { document_id: doc.id, knowledge_base_id: doc.knowledge_base_id, error } });
  }

  /** Resolves when every ingestion started so far has finished (shutdown, bootstrap, tests). */
  async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** The knowledge base `kbId` of `orgId`, or AppError not_found. */
  async requireBase(orgId: string, kbId: string): Promise<KnowledgeBaseRecord> {
    const kb = await this.store.knowledge.getBase(orgId, kbId);
    if (!kb) throw new AppError('not_found', 'No such knowledge base.');
    return kb;
  }
}

/** A document failure whose message is the document's `error` as it is. */
class IngestFailure extends Error {}
