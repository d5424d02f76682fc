import { AppError } from '../errors/app-error.js';
import { newId } from '../ids/ids.js';
import type { Logger } from '../log/logger.js';
import type { EventBus } from '../events/event-bus.js';
import { Outbox } from '../events/outbox.js';
import type { Store } from '../store/ports.js';
import type { DocumentFailure, DocumentRecord, KnowledgeBaseRecord, NewChunk } from '../store/records.js';
import { EmbeddingFailed, type ChunkEmbedder } from './chunk-embedder.js';
import { FairQueue } from './fair-queue.js';
import type { IngestionPool } from './ingestion-pool.js';
import type { DocumentContentType } from './types.js';

/** A document upload: `content` is the raw body (bytes) or JSON `content` (string). */
export interface DocumentUpload {
  title: string;
  contentType: DocumentContentType;
  content: Uint8Array | string;
}

/** Options of {@link KnowledgeService} beyond its collaborators. */
export interface KnowledgeServiceOptions {
  /**
   * Most documents of one organization `processing` at once (PARLEY_INGEST_MAX_PROCESSING_PER_ORG),
   * counted in the store when an upload is stored; one more is refused with 429 `rate_limited`. Undefined:
   * no bound (the command line's `kb import`, which runs its own pool and bounds itself).
   */
  maxProcessingPerOrg?: number;
  /**
   * This process's id (src/cluster/process-registry.ts): the owner of the documents it ingests, so that
   * a restart or a neighbour takes over only the documents of a process that is gone. Default none: the
   * documents have no owner (one process alone; the command line).
   */
  owner?: string;
  /** The expansion limit handed to the parser with every document (PARLEY_INGEST_MAX_EXPANDED_BYTES); default the pool's. */
  maxExpandedBytes?: number;
}

/** `Retry-After` of an upload refused past the per-organization bound, seconds. */
export const INGEST_RETRY_AFTER_S = 5;

/**
 * Knowledge-base documents: records the upload as `processing`, hands parsing and chunking to the
 * parser pool, then stores the chunks (`ready`) or the reason (`failed`, with its `error_code`) and
 * publishes `document.ready` / `document.failed`. A bad document fails alone; the pool keeps serving.
 *
 * Fair and bounded (docs/knowledge-bases.md "Fair ingestion"): documents wait in one queue per
 * organization and are handed to the pool in start-time fair order (src/knowledge/fair-queue.ts: the
 * organizations with waiting documents take turns, one document each), at most as many at once as the
 * pool has parsers; so one organization's slow documents delay another's by at most one document's time
 * limit per parser. A waiting document holds no memory: its upload is read from the store when its turn
 * comes. Each organization may have at most `maxProcessingPerOrg` documents processing (counted in the
 * store); the upload past it gets 429 `rate_limited` with `Retry-After`.
 *
 * With an `embedder` (PARLEY_EMBEDDINGS_MODEL), the chunks are embedded between chunking and storing, in
 * batches with retries (src/knowledge/chunk-embedder.ts); a document whose chunks cannot be embedded
 * fails with `embedding failed: <reason>` (nothing of it is stored).
 */
export class KnowledgeService {
  /** Every document queued or being ingested, until it is ready or failed. */
  private readonly inflight = new Set<Promise<void>>();
  private readonly queue = new FairQueue<{ doc: DocumentRecord; done: () => void }>();
  /** Documents handed to the pool and not yet parsed. */
  private parsing = 0;

  constructor(
    private readonly store: Store,
    private readonly pool: IngestionPool,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    /** The webhook outbox: document.ready / document.failed are stored in the commit of the status. */
    private readonly outbox: Outbox = new Outbox(),
    /** Embeds chunks at ingestion; without it chunks are stored without vectors (bm25 search only). */
    private readonly embedder?: ChunkEmbedder,
    private readonly options: KnowledgeServiceOptions = {},
  ) {}

  private failedEvents(doc: DocumentRecord, failure: DocumentFailure, at: string) {
    return this.outbox.events(doc.org_id, [{
      type: 'document.failed',
      data: { document_id: doc.id, knowledge_base_id: doc.knowledge_base_id, title: doc.title, error: failure.message, error_code: failure.code },
    }], at);
  }

  /**
   * Creates the document record with its upload and queues its ingestion; resolves with the `processing`
   * record once both are durable. With `transfer`, a whole-buffer `content` is moved to the store's
   * writer instead of copied (the caller's array is detached afterwards). `bounded: false` skips the
   * per-organization bound (the server's own first-run import).
   *
   * @throws AppError `rate_limited` (429, `Retry-After`) when the organization already has
   *   `maxProcessingPerOrg` documents processing; nothing is stored then.
   */
  async upload(kb: KnowledgeBaseRecord, upload: DocumentUpload, opts: { transfer?: boolean; bounded?: boolean } = {}): Promise<DocumentRecord> {
    const now = new Date().toISOString();
    const bytes = typeof upload.content === 'string' ? Buffer.byteLength(upload.content) : upload.content.byteLength;
    const doc: DocumentRecord = {
      id: newId('doc'), org_id: kb.org_id, knowledge_base_id: kb.id, title: upload.title,
      content_type: upload.contentType, status: 'processing', error: null, error_code: null, chunk_count: 0, bytes,
      created_at: now, updated_at: now,
    };
    const max = opts.bounded === false ? undefined : this.options.maxProcessingPerOrg;
    const stored = await this.store.knowledge.createDocument(doc, upload.content, {
      ...(max !== undefined ? { maxProcessing: max } : {}), transfer: opts.transfer === true,
      ...(this.options.owner !== undefined ? { owner: this.options.owner } : {}),
    });
    if (!stored) {
      throw new AppError('rate_limited', `This organization already has ${max} documents processing; retry once some are ready.`, {
        headers: { 'Retry-After': String(INGEST_RETRY_AFTER_S) },
      });
    }
    this.enqueue(doc);
    return doc;
  }

  /**
   * Start-up recovery: every document still `processing` whose ingestion was cut short (by a crash or a
   * kill of the process that ingested it, or of an earlier run) is taken over (KnowledgePort.claimPending:
   * never a living neighbour's) and queued again, oldest first, in the same fair queue as uploads (so a
   * restart is fair between organizations too), and ingested from its stored upload when its turn comes;
   * one whose upload was never stored (accepted by an older version) then fails with a reason. Resolves
   * with the number of documents queued once they are (not ingested).
   */
  async resumePending(): Promise<{ resumed: number }> {
    return this.takeOver([]);
  }

  /** Process `ownerId` is gone: the documents it was ingesting are taken over and queued here. */
  async takeOverFrom(ownerId: string): Promise<{ resumed: number }> {
    return this.takeOver([ownerId]);
  }

  private async takeOver(deadOwners: string[]): Promise<{ resumed: number }> {
    const pending = this.options.owner === undefined
      ? await this.store.knowledge.pendingDocuments()
      : await this.store.knowledge.claimPending(this.options.owner, deadOwners);
    for (const doc of pending) this.enqueue(doc);
    if (pending.length > 0) this.logger.warn({ resumed: pending.length }, 'documents whose ingestion was cut short: ingesting them again');
    return { resumed: pending.length };
  }

  /** Documents of `orgId` waiting for a parser in this process. */
  waiting(orgId: string): number {
    return this.queue.sizeOf(orgId);
  }

  /**
   * Shutdown: documents still waiting for a parser are left as they are stored (`processing`, with their
   * upload; the next start ingests them again, resumePending) instead of being parsed now; the documents
   * being ingested carry on, and {@link settled} then waits for them only. Later uploads are queued as usual.
   */
  stopWaiting(): void {
    for (const { done } of this.queue.drain()) done();
  }

  private enqueue(doc: DocumentRecord): void {
    let done!: () => void;
    const job = new Promise<void>((resolve) => { done = resolve; }).finally(() => this.inflight.delete(job));
    this.inflight.add(job);
    this.queue.push(doc.org_id, { doc, done });
    this.pump();
  }

  /** Hands queued documents to the pool while it has a free parser. */
  private pump(): void {
    while (this.parsing < this.pool.processes && this.queue.size > 0) {
      const next = this.queue.shift()!;
      this.parsing++;
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        this.parsing--;
        this.pump();
      };
      this.ingest(next.doc, release).catch((err: unknown) => {
        this.logger.error({ err, document_id: next.doc.id }, 'ingestion failed unexpectedly');
      }).finally(() => {
        release();
        next.done();
      });
    }
  }

  /** Parses (then calls `parsed`, freeing the parser for the next document), embeds and stores one document. */
  private async ingest(doc: DocumentRecord, parsed: () => void): Promise<void> {
    const started = performance.now();
    let failure: DocumentFailure;
    try {
      const content = await this.store.knowledge.documentSource(doc.id);
      if (content === undefined) return; // deleted while it waited
      if (content === null) {
        throw new IngestFailure({ code: 'ingestion_failed', message: 'ingestion was interrupted and the upload was not kept; upload the document again' });
      }
      const result = await this.pool.run({
        title: doc.title, contentType: doc.content_type, content,
        ...(this.options.maxExpandedBytes !== undefined ? { maxExpandedBytes: this.options.maxExpandedBytes } : {}),
      });
      parsed();
      if (result.ok) {
        let chunks: NewChunk[] = result.chunks;
        if (this.embedder !== undefined) {
          try {
            chunks = await this.embedder.embedDocument(doc.title, result.chunks);
          } catch (err) {
            if (!(err instanceof EmbeddingFailed)) throw err;
            this.logger.warn({ document_id: doc.id, reason: err.message }, 'embedding failed: the document fails');
            throw new IngestFailure({ code: 'embedding_failed', message: `embedding failed: ${err.message}` });
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
      failure = { code: result.code, message: result.error };
    } catch (err) {
      parsed();
      if (err instanceof IngestFailure) {
        failure = err.failure;
      } else {
        this.logger.error({ err, document_id: doc.id }, 'ingestion failed unexpectedly');
        failure = { code: 'ingestion_failed', message: 'ingestion failed unexpectedly' };
      }
    }
    try {
      const at = new Date().toISOString();
      const events = this.failedEvents(doc, failure, at);
      await this.store.knowledge.failDocument(doc.id, failure, at, events);
      this.outbox.committed(events);
    } catch (err) {
      this.logger.error({ err, document_id: doc.id }, 'could not record the ingestion failure');
    }
    this.bus.publish({ type: 'document.failed', org_id: doc.org_id, data: { document_id: doc.id, knowledge_base_id: doc.knowledge_base_id, error: failure.message, error_code: failure.code } });
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

/** A document failure whose code and message are the document's `error_code` and `error` as they are. */
class IngestFailure extends Error {
  constructor(readonly failure: DocumentFailure) {
    super(failure.message);
  }
}
