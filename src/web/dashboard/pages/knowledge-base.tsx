import '../shared.js';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { Organization, Schemas } from '../api.js';
import { unwrap } from '../client.js';
import { linkTo } from '../router.js';
import type { Session } from '../session.js';
import { ConfirmDialog, ErrorAlert, formatBytes, messageOf, PageTitle, StatusMessage } from '../ui.js';
import { ACCEPTED, uploadDocument } from '../upload.js';
import { canManage } from './roles.js';

type Document = Schemas['Document'];
type KnowledgeBase = Schemas['KnowledgeBase'];
type Passage = Schemas['SearchResults']['data'][number];

/** First wait between two reads of the documents while one is processing, ms; it grows to POLL_MAX_MS. */
const POLL_FIRST_MS = 1_000;
const POLL_MAX_MS = 10_000;

/** One file being uploaded, or uploaded: its progress (bytes) and outcome. */
interface Upload {
  key: number;
  name: string;
  sent: number;
  total: number;
  state: 'sending' | 'done' | 'failed';
  error: string | null;
}

let uploadKeys = 0;

const TYPE_LABELS: Record<string, string> = {
  'text/markdown': 'Markdown', 'text/plain': 'Text', 'text/html': 'HTML', 'application/pdf': 'PDF',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'Word',
};
const STATUS_LABELS: Record<Document['status'], string> = { processing: 'Processing', ready: 'Ready', failed: 'Failed' };

/** The documents of a base, read again while any is processing, with a backoff (1 s, x1.5, at most 10 s). */
function useDocuments(session: Session, kbId: string) {
  const [docs, setDocs] = useState<Document[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const timer = useRef<number | undefined>(undefined);
  const delay = useRef(POLL_FIRST_MS);
  const seq = useRef(0);

  const load = useCallback(async () => {
    window.clearTimeout(timer.current);
    const mine = ++seq.current;
    try {
      const page = await unwrap(session.api.GET('/v1/knowledge-bases/{kb_id}/documents', { params: { path: { kb_id: kbId }, query: { limit: 100 } } }));
      if (mine !== seq.current) return;
      setDocs(page.data);
      setError(null);
      if (page.data.some((d) => d.status === 'processing')) {
        timer.current = window.setTimeout(() => { void load(); }, delay.current);
        delay.current = Math.min(POLL_MAX_MS, delay.current * 1.5);
      }
    } catch (err) {
      if (mine !== seq.current) return;
      setError(messageOf(err));
      timer.current = window.setTimeout(() => { void load(); }, POLL_MAX_MS);
    }
  }, [session, kbId]);

  useEffect(() => {
    void load();
    return () => { seq.current++; window.clearTimeout(timer.current); };
  }, [load]);

  /** Reads now and polls quickly again (after an upload or a delete). */
  const refresh = useCallback(() => { delay.current = POLL_FIRST_MS; void load(); }, [load]);
  return { docs, error, refresh };
}

/**
 * A knowledge base (issue 40): uploads with progress (several files, or dropped ones), its documents with a
 * status that follows ingestion live (Processing, Ready, or Failed with the reason), and Test a search,
 * which shows the passages chat would retrieve. Deleting a document asks first (the base is deleted from
 * the Knowledge page).
 */
export function KnowledgeBasePage({ session, org, kbId }: { session: Session; org: Organization; kbId: string }) {
  const manager = canManage(org);
  const [kb, setKb] = useState<KnowledgeBase | null>(null);
  const [kbError, setKbError] = useState<string | null>(null);
  const { docs, error: docsError, refresh } = useDocuments(session, kbId);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const [flash, setFlash] = useState('');
  const [deletingDoc, setDeletingDoc] = useState<Document | null>(null);
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<Passage[] | null>(null);
  const [searching, setSearching] = useState(false);
  const [searchError, setSearchError] = useState<string | null>(null);
  const aborts = useRef(new Set<AbortController>());

  useEffect(() => {
    let live = true;
    unwrap(session.api.GET('/v1/knowledge-bases/{kb_id}', { params: { path: { kb_id: kbId } } }))
      .then((k) => { if (live) setKb(k); }, (err: unknown) => { if (live) setKbError(messageOf(err)); });
    return () => { live = false; };
  }, [session, kbId, docs]);
  useEffect(() => () => { for (const a of aborts.current) a.abort(); }, []);

  function uploadFiles(files: FileList | File[]) {
    setFlash('');
    for (const file of Array.from(files)) {
      const key = ++uploadKeys;
      const change = (c: Partial<Upload>) => setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...c } : u)));
      setUploads((all) => [...all, { key, name: file.name, sent: 0, total: file.size, state: 'sending', error: null }]);
      const abort = new AbortController();
      aborts.current.add(abort);
      uploadDocument(session, kbId, file, (sent, total) => change({ sent, total }), abort.signal)
        .then(() => { change({ state: 'done', sent: file.size }); refresh(); })
        .catch((err: unknown) => { if (!abort.signal.aborted) change({ state: 'failed', error: messageOf(err) }); })
        .finally(() => aborts.current.delete(abort));
    }
  }

  async function search(e: Event) {
    e.preventDefault();
    if (query.trim() === '') return;
    setSearching(true);
    setSearchError(null);
    try {
      const found = await unwrap(session.api.GET('/v1/knowledge-bases/{kb_id}/search', { params: { path: { kb_id: kbId }, query: { q: query, k: 5 } } }));
      setResults(found.data);
    } catch (err) {
      setSearchError(messageOf(err));
    } finally {
      setSearching(false);
    }
  }

  const processing = (docs ?? []).filter((d) => d.status === 'processing').length;

  return (
    <>
      <div class="page-head">
        <div>
          <p class="crumbs"><a href="/dashboard/knowledge" onClick={linkTo('knowledge')}>Knowledge bases</a></p>
          <PageTitle>{kb?.name ?? 'Knowledge base'}</PageTitle>
          {kb !== null && (
            <p class="muted small">
              {kb.document_count.toLocaleString()} documents · {kb.chunk_count.toLocaleString()} passages · {formatBytes(kb.bytes)} · <code>{kb.id}</code>
            </p>
          )}
        </div>
      </div>
      <ErrorAlert message={kbError} />
      <StatusMessage message={flash} />

      {manager && (
        <section class="card stack" aria-labelledby="upload-title">
          <h2 id="upload-title" class="card-title">Add documents</h2>
          <div class={dragging ? 'dropzone dropzone-over' : 'dropzone'}
            onDragOver={(e) => { e.preventDefault(); setDragging(true); }}
            onDragLeave={() => setDragging(false)}
            onDrop={(e) => { e.preventDefault(); setDragging(false); if (e.dataTransfer?.files.length) uploadFiles(e.dataTransfer.files); }}>
            <label for="kb-upload" class="dropzone-label">Upload documents</label>
            <p class="hint" id="kb-upload-hint">Choose files or drop them here: Markdown, text, HTML, PDF or Word (.docx), several at once.</p>
            <input id="kb-upload" type="file" multiple accept={ACCEPTED} aria-describedby="kb-upload-hint"
              onChange={(e) => { const input = e.currentTarget; if (input.files?.length) uploadFiles(input.files); input.value = ''; }} />
          </div>
          {uploads.length > 0 && (
            <ul class="uploads" aria-label="Uploads">
              {uploads.map((u) => (
                <li key={u.key} class="upload">
                  <span class="upload-name">{u.name}</span>
                  <progress max={u.total || 1} value={u.state === 'sending' ? u.sent : u.total || 1} aria-label={`Upload of ${u.name}`} />
                  <span class={u.state === 'failed' ? 'upload-state field-error' : 'upload-state'}>
                    {u.state === 'sending' ? `${Math.round((u.sent / (u.total || 1)) * 100)}%` : u.state === 'done' ? 'Uploaded' : `Failed: ${u.error}`}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}

      <section class="stack kb-section" aria-labelledby="docs-title">
        <h2 id="docs-title">Documents</h2>
        <ErrorAlert message={docsError} />
        <p class="visually-hidden" role="status">{processing > 0 ? `${processing} documents processing.` : ''}</p>
        {docs === null && docsError === null && <p class="muted" aria-busy="true">Loading documents…</p>}
        {docs !== null && docs.length === 0 && <div class="empty"><p class="muted">No documents yet.</p></div>}
        {docs !== null && docs.length > 0 && (
          <div class="table-wrap">
            <table class="table">
              <caption class="visually-hidden">Documents of {kb?.name ?? 'this knowledge base'}</caption>
              <thead>
                <tr><th scope="col">Title</th><th scope="col">Type</th><th scope="col">Size</th><th scope="col">Chunks</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
              </thead>
              <tbody>
                {docs.map((d) => (
                  <tr key={d.id}>
                    <th scope="row" data-label="Title" class="cell-strong">{d.title}</th>
                    <td data-label="Type">{TYPE_LABELS[d.content_type] ?? d.content_type}</td>
                    <td data-label="Size">{formatBytes(d.bytes)}</td>
                    <td data-label="Chunks">{d.status === 'ready' ? d.chunk_count.toLocaleString() : '—'}</td>
                    <td data-label="Status">
                      <span class={`badge doc-${d.status}`}>{STATUS_LABELS[d.status]}</span>
                      {d.status === 'failed' && d.error !== null && <span class="cell-detail doc-error">{d.error}</span>}
                    </td>
                    <td class="cell-actions">
                      {manager && (
                        <div class="actions">
                          <button type="button" class="btn btn-sm btn-danger-quiet" aria-label={`Delete ${d.title}`} onClick={() => { setFlash(''); setDeletingDoc(d); }}>Delete</button>
                        </div>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section class="card stack kb-section" aria-labelledby="search-title">
        <h2 id="search-title" class="card-title">What chat would find</h2>
        <p class="hint">The passages chat would retrieve for a question, best first: how to check what your agents will find.</p>
        <form class="form-row" role="search" onSubmit={search}>
          <div class="field">
            <label for="kb-search" class="visually-hidden">Test a search</label>
            <input id="kb-search" type="text" enterkeyhint="search" placeholder="Test a search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
          </div>
          <button type="submit" class="btn" disabled={searching || query.trim() === ''}>{searching ? 'Searching…' : 'Search'}</button>
        </form>
        <ErrorAlert message={searchError} />
        {results !== null && results.length === 0 && <p class="muted" role="status">No passage matches. Only ready documents are searched.</p>}
        {results !== null && results.length > 0 && (
          <ol class="passages" aria-label="Passages found">
            {results.map((p) => (
              <li key={p.chunk_id} class="passage">
                <div class="passage-head">
                  <span class="source-title">{p.title}</span>
                  <span class="passage-score" title="Relevance score: higher is better">score {Number(p.score.toPrecision(3))}</span>
                </div>
                {(p.heading !== '' || p.page !== null) && (
                  <p class="passage-where">{[p.heading, p.page === null ? '' : `page ${p.page}`].filter((s) => s !== '').join(' · ')}</p>
                )}
                <p class="passage-text">{p.text}</p>
              </li>
            ))}
          </ol>
        )}
      </section>

      {deletingDoc !== null && (
        <ConfirmDialog title={`Delete “${deletingDoc.title}”?`} confirmLabel="Delete" busyLabel="Deleting…"
          action={() => unwrap(session.api.DELETE('/v1/knowledge-bases/{kb_id}/documents/{doc_id}', { params: { path: { kb_id: kbId, doc_id: deletingDoc.id } } }))}
          onDone={(done) => { if (done) { setFlash(`“${deletingDoc.title}” is deleted.`); refresh(); } setDeletingDoc(null); }}>
          <p>Its passages stop being found at once. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
