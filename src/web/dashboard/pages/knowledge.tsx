import '../shared.js';
import { useState } from 'preact/hooks';
import type { Organization, Schemas } from '../api.js';
import { unwrap } from '../client.js';
import { linkTo, navigate, pathOf } from '../router.js';
import type { Session } from '../session.js';
import { ConfirmDialog, ErrorAlert, Field, formatBytes, formatDate, ListFooter, messageOf, Modal, PageTitle, StatusMessage, usePagedList } from '../ui.js';
import { canManage } from './roles.js';

type KnowledgeBase = Schemas['KnowledgeBase'];

/**
 * The organization's knowledge bases (issue 40), each with its documents, passages (chunks) and size;
 * owners and admins create one (a dialog with Name and Create) and delete one after confirming.
 */
export function KnowledgePage({ session, org }: { session: Session; org: Organization }) {
  const list = usePagedList<KnowledgeBase>(
    (after) => unwrap(session.api.GET('/v1/knowledge-bases', { params: { query: after === undefined ? { limit: 100 } : { limit: 100, after } } })),
    (kb) => kb.id, org.id,
  );
  const manager = canManage(org);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [createError, setCreateError] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<KnowledgeBase | null>(null);
  const [flash, setFlash] = useState('');

  async function create(e: Event) {
    e.preventDefault();
    setBusy(true);
    setCreateError(null);
    try {
      const kb = await unwrap(session.api.POST('/v1/knowledge-bases', { body: { name } }));
      setCreating(false);
      setName('');
      navigate('knowledge-base', false, kb.id);
    } catch (err) {
      setCreateError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Knowledge bases</PageTitle>
          <p class="muted">Documents your agents answer from, with citations. Attach a knowledge base to an agent in its editor.</p>
        </div>
        {manager && <button type="button" class="btn btn-primary" onClick={() => { setFlash(''); setCreateError(null); setCreating(true); }}>New knowledge base</button>}
      </div>
      <StatusMessage message={flash} />
      {list.items !== null && list.items.length === 0 && (
        <div class="empty">
          <p><strong>No knowledge bases yet.</strong></p>
          <p class="muted">{manager ? 'Create one, then upload Markdown, text, HTML, PDF or Word documents.' : 'An owner or admin can create one.'}</p>
        </div>
      )}
      {list.items !== null && list.items.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Knowledge bases of {org.name}</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Documents</th><th scope="col">Chunks</th><th scope="col">Size</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
            </thead>
            <tbody>
              {list.items.map((kb) => (
                <tr key={kb.id}>
                  <th scope="row" data-label="Name" class="cell-strong">
                    <a href={pathOf('knowledge-base', kb.id)} onClick={linkTo('knowledge-base', kb.id)}>{kb.name}</a>
                    <span class="cell-detail"><code>{kb.id}</code></span>
                  </th>
                  <td data-label="Documents">{kb.document_count.toLocaleString()}</td>
                  <td data-label="Chunks">{kb.chunk_count.toLocaleString()}</td>
                  <td data-label="Size">{formatBytes(kb.bytes)}</td>
                  <td data-label="Created">{formatDate(kb.created_at)}</td>
                  <td class="cell-actions">
                    {manager && (
                      <div class="actions">
                        <button type="button" class="btn btn-sm btn-danger-quiet" aria-label={`Delete ${kb.name}`} onClick={() => { setFlash(''); setDeleting(kb); }}>Delete</button>
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="knowledge bases" />
      {creating && (
        <Modal title="New knowledge base" onClose={() => setCreating(false)}>
          <form class="stack" onSubmit={create}>
            <ErrorAlert message={createError} />
            <Field id="kb-name" label="Name">
              <input id="kb-name" value={name} required maxLength={200} autocomplete="off" onInput={(e) => setName(e.currentTarget.value)} />
            </Field>
            <div class="modal-actions">
              <button type="button" class="btn" onClick={() => setCreating(false)}>Cancel</button>
              <button type="submit" class="btn btn-primary" disabled={busy || name.trim() === ''}>{busy ? 'Creating…' : 'Create'}</button>
            </div>
          </form>
        </Modal>
      )}
      {deleting !== null && (
        <ConfirmDialog title={`Delete “${deleting.name}”?`} confirmLabel="Delete" busyLabel="Deleting…"
          action={() => unwrap(session.api.DELETE('/v1/knowledge-bases/{kb_id}', { params: { path: { kb_id: deleting.id } } }))}
          onDone={(done) => { if (done) { setFlash(`“${deleting.name}” is deleted.`); list.reload(); } setDeleting(null); }}>
          <p>Its {deleting.document_count.toLocaleString()} documents and their passages are deleted, and agents that use it stop answering from it. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
