import { Binary } from 'mongodb';
import { newId } from '../../ids/ids.js';
import type { KnowledgePort } from '../ports.js';
import type { ChunkHit, DocumentRecord, KnowledgeBaseRecord, KnowledgeBaseStats, NewChunk, OutboxEvent } from '../records.js';
import { toPage } from '../list-page.js';
import { cosine, norm, TopK } from '../vectors.js';
import { chunkLength } from './bm25.js';
import type { MongoContext } from './context.js';
import { KnowledgeSearcher } from './knowledge-search.js';
import { writeOutbox } from './outbox.js';
import { lock } from './transactions.js';
import { newestFirst } from './pagination.js';
import type { ChunkDoc, DocumentDoc, KnowledgeBaseDoc } from './schema.js';

/** Chunks inserted per write while a document is stored (each write is its own, not a transaction). */
export const CHUNK_SLICE = 256;

/** Chunk documents read per batch of a vector scan (the scan yields to the event loop between batches). */
export const VECTOR_BATCH = 256;

const baseFromDoc = (d: KnowledgeBaseDoc): KnowledgeBaseRecord => ({ id: d._id, org_id: d.org_id, name: d.name, created_at: d.created_at });

export const documentToDoc = (r: DocumentRecord): DocumentDoc => ({
  _id: r.id, org_id: r.org_id, kb_id: r.knowledge_base_id, title: r.title, content_type: r.content_type, status: r.status,
  error: r.error, error_code: r.error_code, chunk_count: r.chunk_count, bytes: r.bytes, created_at: r.created_at, updated_at: r.updated_at,
});

export const documentFromDoc = (d: DocumentDoc): DocumentRecord => ({
  id: d._id, org_id: d.org_id, knowledge_base_id: d.kb_id, title: d.title, content_type: d.content_type, status: d.status,
  error: d.error ?? null, error_code: d.error_code ?? null, chunk_count: d.chunk_count, bytes: d.bytes, created_at: d.created_at, updated_at: d.updated_at,
});

/** The document of a chunk of document `doc` (not ready until its document is: `ready` false). */
export function chunkToDoc(c: NewChunk, doc: { id: string; kb_id: string; org_id: string; title: string }): ChunkDoc {
  const e = c.embedding ?? null;
  return {
    _id: newId('chk'), doc_id: doc.id, kb_id: doc.kb_id, org_id: doc.org_id, ord: c.ord, title: doc.title, heading: c.heading, body: c.text,
    page: c.page ?? null, embedding_model: e === null ? null : e.model, embedding: e === null ? null : Binary.fromFloat32Array(e.vector),
    ready: false, dl: chunkLength({ title: doc.title, heading: c.heading, body: c.text }),
  };
}

/** An upload as it was stored: a string as a string, bytes as a Uint8Array (a copy owned by the caller). */
export function sourceContent(content: string | Binary, isText: boolean): Uint8Array | string {
  if (isText) return content as string;
  return new Uint8Array((content as Binary).value());
}

/** Resolves on the event loop's next check phase: timers, I/O and other turns run in between. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * KnowledgePort on MongoDB (collections `knowledge_bases`, `documents`, `document_sources`, `chunks`).
 *
 * A document and its upload are one transaction (createDocument). Its chunks are stored by
 * completeDocument in slices of {@link CHUNK_SLICE} inserts, marked `ready: false`, then one transaction
 * marks the document `ready` with its chunks and writes its events; a crash part-way leaves the document
 * `processing` (ingested again at the next start, its leftover chunks deleted first). Deletes remove the
 * document (and its upload) in a transaction, then its chunks; every search reads the documents of its
 * best hits last and keeps those still `ready`, so a chunk left behind by a crash is never returned.
 *
 * search: `$text` candidates within each knowledge base, ranked by BM25 in the application
 * (knowledge-search.ts). vectorSearch: a scan of the float32 BinData vectors of the bases' ready chunks
 * of one model, batch by batch, yielding to the event loop between batches (docs/knowledge-bases.md says
 * where Atlas Vector Search would take over).
 */
export function createKnowledge({ c, tx }: MongoContext): KnowledgePort {
  const searcher = new KnowledgeSearcher(c);
  /** The run in progress per document id: a second call for the same id waits for it, then replaces its chunks. */
  const running = new Map<string, Promise<boolean>>();

  const dropChunks = async (docId: string) => { await c.chunks.deleteMany({ doc_id: docId }); };

  async function complete(id: string, chunks: NewChunk[], at: string, events: OutboxEvent[] | undefined): Promise<boolean> {
    const doc = await c.documents.findOneAndUpdate({ _id: id }, [{ $set: { status: 'processing', error: null, error_code: null } }], { projection: { kb_id: 1, org_id: 1, title: 1 } });
    if (doc === null) return false;
    await dropChunks(id);
    const owner = { id, kb_id: doc.kb_id, org_id: doc.org_id, title: doc.title };
    for (let i = 0; i < chunks.length; i += CHUNK_SLICE) {
      if ((await c.documents.countDocuments({ _id: id }, { limit: 1 })) === 0) {
        await dropChunks(id);
        return false;
      }
      await c.chunks.insertMany(chunks.slice(i, i + CHUNK_SLICE).map((ch) => chunkToDoc(ch, owner)));
    }
    const ready = await tx(async (session) => {
      const r = await c.documents.updateOne({ _id: id }, { $set: { status: 'ready', error: null, error_code: null, chunk_count: chunks.length, updated_at: at } }, { session });
      if (r.matchedCount === 0) return false;
      await c.chunks.updateMany({ doc_id: id }, { $set: { ready: true } }, { session });
      await writeOutbox(c, session, events);
      return true;
    });
    if (!ready) await dropChunks(id);
    searcher.forget(doc.kb_id);
    return ready;
  }

  return {
    async createBase(kb) {
      await c.knowledge_bases.insertOne({ _id: kb.id, org_id: kb.org_id, name: kb.name, created_at: kb.created_at });
    },
    async getBase(orgId, id) {
      const d = await c.knowledge_bases.findOne({ _id: id, org_id: orgId });
      return d === null ? undefined : baseFromDoc(d);
    },
    async listBases(orgId, page) {
      return toPage(await newestFirst(c.knowledge_bases, { org_id: orgId }, page, 'knowledge base'), page, baseFromDoc);
    },
    async findBases(ref, orgId) {
      const filter = { $or: [{ _id: ref }, { name: ref }], ...(orgId === undefined ? {} : { org_id: orgId }) };
      return (await c.knowledge_bases.find(filter).sort({ created_at: 1, _id: 1 }).toArray()).map(baseFromDoc);
    },
    async baseStats(orgId, kbIds) {
      const out = new Map<string, KnowledgeBaseStats>(kbIds.map((id) => [id, { document_count: 0, chunk_count: 0, bytes: 0 }]));
      if (kbIds.length === 0) return out;
      const rows = await c.documents.aggregate<{ _id: string; documents: number; chunks: number; bytes: number }>([
        { $match: { org_id: orgId, kb_id: { $in: kbIds } } },
        { $group: { _id: '$kb_id', documents: { $sum: 1 }, chunks: { $sum: '$chunk_count' }, bytes: { $sum: '$bytes' } } },
      ]).toArray();
      for (const r of rows) out.set(r._id, { document_count: r.documents, chunk_count: r.chunks, bytes: r.bytes });
      return out;
    },
    async deleteBase(orgId, id) {
      const docIds = await tx(async (session) => {
        if ((await c.knowledge_bases.deleteOne({ _id: id, org_id: orgId }, { session })).deletedCount === 0) return undefined;
        const ids = (await c.documents.find({ kb_id: id, org_id: orgId }, { session, projection: { _id: 1 } }).toArray()).map((d) => d._id);
        await c.document_sources.deleteMany({ _id: { $in: ids } }, { session });
        await c.documents.deleteMany({ kb_id: id, org_id: orgId }, { session });
        return ids;
      });
      if (docIds === undefined) return false;
      await c.chunks.deleteMany({ kb_id: id, org_id: orgId });
      searcher.forget(id);
      return true;
    },
    async createDocument(d, content, opts = {}) {
      // `transfer` is the SQLite writer's: here the driver serializes the bytes, nothing to move.
      return tx(async (session) => {
        if (opts.maxProcessing !== undefined) {
          // The count and the insert must agree across processes: under snapshot isolation two uploads
          // could both count below the bound, so both first lock their organization's ingestion.
          await lock(c, session, `processing/${d.org_id}`);
          const n = await c.documents.countDocuments({ org_id: d.org_id, status: 'processing' }, { session, limit: opts.maxProcessing });
          if (n >= opts.maxProcessing) return false;
        }
        await c.documents.insertOne({ ...documentToDoc(d), ingest_owner: opts.owner ?? null }, { session });
        const isText = typeof content === 'string';
        await c.document_sources.insertOne({ _id: d.id, content: isText ? content : new Binary(content), is_text: isText }, { session });
        return true;
      });
    },
    async claimPending(owner, deadOwners) {
      const living = new Set((await c.processes.find({}, { projection: { _id: 1 } }).toArray()).map((p) => p._id));
      const dead = new Set(deadOwners);
      const candidates = await c.documents.find({ status: 'processing' }, { projection: { _id: 1, ingest_owner: 1 } }).sort({ created_at: 1, _id: 1 }).toArray();
      const claimed: DocumentRecord[] = [];
      for (const d of candidates) {
        const was = d.ingest_owner ?? null;
        if (was === owner) continue;
        if (was !== null && !dead.has(was) && living.has(was)) continue;
        // Conditional on the owner read above: of two processes claiming one document, one wins.
        const taken = await c.documents.findOneAndUpdate(
          { _id: d._id, status: 'processing', ingest_owner: was }, { $set: { ingest_owner: owner } }, { returnDocument: 'after' },
        );
        if (taken !== null) claimed.push(documentFromDoc(taken));
      }
      return claimed;
    },
    async documentSource(id) {
      const s = await c.document_sources.findOne({ _id: id });
      if (s !== null) return sourceContent(s.content, s.is_text);
      return (await c.documents.countDocuments({ _id: id }, { limit: 1 })) > 0 ? null : undefined;
    },
    async getDocument(orgId, kbId, id) {
      const d = await c.documents.findOne({ _id: id, org_id: orgId, kb_id: kbId });
      return d === null ? undefined : documentFromDoc(d);
    },
    async listDocuments(orgId, kbId, page) {
      return toPage(await newestFirst(c.documents, { org_id: orgId, kb_id: kbId }, page, 'document'), page, documentFromDoc);
    },
    async pendingDocuments(): Promise<DocumentRecord[]> {
      return (await c.documents.find({ status: 'processing' }).sort({ created_at: 1, _id: 1 }).toArray()).map(documentFromDoc);
    },
    completeDocument(id, chunks, at, events) {
      const before = running.get(id);
      const run = before === undefined ? complete(id, chunks, at, events) : before.catch(() => false).then(() => complete(id, chunks, at, events));
      running.set(id, run);
      const forget = () => { if (running.get(id) === run) running.delete(id); };
      run.then(forget, forget);
      return run;
    },
    async failDocument(id, failure, at, events) {
      const kb = await tx(async (session) => {
        const d = await c.documents.findOneAndUpdate({ _id: id }, { $set: { status: 'failed', error: failure.message, error_code: failure.code, updated_at: at } }, { session, projection: { kb_id: 1 } });
        await c.chunks.updateMany({ doc_id: id }, { $set: { ready: false } }, { session });
        await writeOutbox(c, session, events);
        return d?.kb_id;
      });
      if (kb !== undefined) searcher.forget(kb);
    },
    async deleteDocument(orgId, kbId, id) {
      const deleted = await tx(async (session) => {
        if ((await c.documents.deleteOne({ _id: id, org_id: orgId, kb_id: kbId }, { session })).deletedCount === 0) return false;
        await c.document_sources.deleteOne({ _id: id }, { session });
        return true;
      });
      if (!deleted) return false;
      await dropChunks(id);
      searcher.forget(kbId);
      return true;
    },
    search(orgId, kbIds, query, k) {
      return searcher.search(orgId, kbIds, query, k);
    },
    async vectorSearch(orgId, kbIds, model, query, k): Promise<ChunkHit[]> {
      const queryNorm = norm(query);
      if (kbIds.length === 0 || k <= 0 || query.length === 0 || queryNorm === 0) return [];
      const best = new TopK<string>(k);
      const cursor = c.chunks.find(
        { org_id: orgId, kb_id: { $in: kbIds }, embedding_model: model, ready: true }, { projection: { embedding: 1 }, batchSize: VECTOR_BATCH },
      );
      let inBatch = 0;
      for await (const d of cursor) {
        if (++inBatch === VECTOR_BATCH) {
          inBatch = 0;
          await nextTurn();
        }
        const vector = d.embedding?.toFloat32Array();
        if (vector !== undefined && vector.length === query.length) best.offer(d._id, cosine(query, vector, queryNorm));
      }
      const top = best.sorted();
      if (top.length === 0) return [];
      const chunks = new Map((await c.chunks.find({ _id: { $in: top.map((t) => t.item) } }, { projection: { embedding: 0 } }).toArray()).map((d) => [d._id, d]));
      const ready = new Set((await c.documents.find(
        { _id: { $in: [...new Set([...chunks.values()].map((d) => d.doc_id))] }, status: 'ready' }, { projection: { _id: 1 } },
      ).toArray()).map((d) => d._id));
      const hits: ChunkHit[] = [];
      for (const t of top) {
        const d = chunks.get(t.item);
        // A document deleted or failed during the scan drops out here.
        if (d === undefined || !ready.has(d.doc_id)) continue;
        hits.push({ document_id: d.doc_id, chunk_id: d._id, title: d.title, heading: d.heading, text: d.body, page: d.page ?? null, score: Math.round(t.score * 1e6) / 1e6 });
      }
      return hits;
    },
  };
}
