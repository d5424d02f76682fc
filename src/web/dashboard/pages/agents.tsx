import '../shared.js';
import { useState } from 'preact/hooks';
import type { Agent, Organization, Page } from '../api.js';
import { linkTo, navigate, pathOf } from '../router.js';
import type { Session } from '../session.js';
import { ErrorAlert, formatDate, ListFooter, messageOf, Modal, pageQuery, PageTitle, StatusMessage, usePagedList } from '../ui.js';
import { EmbedBox } from './embed.js';
import { canManage } from './roles.js';

const agentId = (a: Agent) => a.id;

/**
 * The organization's agents with their model and whether they are published; owners and admins publish
 * and unpublish (API.md "Agents"). A published agent's embed tag is shown ready to paste, with a link to
 * the widget preview.
 */
export function AgentsPage({ session, org }: { session: Session; org: Organization }) {
  const list = usePagedList<Agent>((after) => session.request<Page<Agent>>('GET', `/v1/agents${pageQuery(after)}`), agentId, org.id);
  const manager = canManage(org);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [flash, setFlash] = useState('');
  const [confirming, setConfirming] = useState<Agent | null>(null);

  async function publish(agent: Agent, on: boolean) {
    setBusy(agent.id);
    setError(null);
    setFlash('');
    try {
      await session.request('POST', `/v1/agents/${encodeURIComponent(agent.id)}/${on ? 'publish' : 'unpublish'}`);
      setFlash(on ? `“${agent.name}” is published: paste its embed tag into your website.` : `“${agent.name}” is unpublished: its public key no longer works.`);
      list.reload();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(null);
      setConfirming(null);
    }
  }

  const published = (list.items ?? []).filter((a) => a.published && a.public_key !== null);

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Agents</PageTitle>
          <p class="muted">The agents of {org.name}: build one on your documents, try it in its playground, publish it to chat with visitors on your website.</p>
        </div>
        {manager && <button type="button" class="btn btn-primary" onClick={() => navigate('agent', false, 'new')}>New agent</button>}
      </div>
      <ErrorAlert message={error} />
      <StatusMessage message={flash} />
      {list.items !== null && list.items.length === 0 && (
        <div class="empty">
          <p><strong>No agents yet.</strong></p>
          <p class="muted">{manager ? 'Press New agent to build one.' : 'An owner or admin can create one.'}</p>
        </div>
      )}
      {list.items !== null && list.items.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Agents of {org.name}</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Model</th><th scope="col">Public chat</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
            </thead>
            <tbody>
              {list.items.map((agent) => (
                <tr key={agent.id}>
                  <th scope="row" data-label="Name" class="cell-strong">
                    <span id={`agent-${agent.id}`}>{agent.name}</span>
                    {agent.description !== '' && <span class="cell-detail">{agent.description}</span>}
                    <span class="cell-detail"><code>{agent.id}</code></span>
                  </th>
                  <td data-label="Model"><code>{agent.model.provider} / {agent.model.name}</code></td>
                  <td data-label="Public chat">
                    <div>
                      {agent.published
                        ? <><span class="badge badge-active">Published</span>{agent.public_key !== null && <span class="cell-detail"><code>{agent.public_key}</code></span>}</>
                        : <span class="badge badge-muted">Not published</span>}
                    </div>
                  </td>
                  <td data-label="Created">{formatDate(agent.created_at)}</td>
                  <td class="cell-actions">
                    <div class="actions">
                      {manager && <a class="btn btn-sm" href={pathOf('agent', agent.id)} onClick={linkTo('agent', agent.id)} aria-describedby={`agent-${agent.id}`}>Edit</a>}
                      {agent.published && (
                        <a class="btn btn-sm" href={pathOf('preview', `?agent=${agent.id}`)} onClick={linkTo('preview', `?agent=${agent.id}`)}
                          aria-label={`Preview the widget of ${agent.name}`}>Preview</a>
                      )}
                      {manager && (agent.published
                        ? <button type="button" class="btn btn-sm btn-danger-quiet" disabled={busy !== null} aria-label={`Unpublish ${agent.name}`}
                          onClick={() => { setFlash(''); setConfirming(agent); }}>Unpublish</button>
                        : <button type="button" class="btn btn-sm btn-primary" disabled={busy !== null} aria-label={`Publish ${agent.name}`}
                          onClick={() => { void publish(agent, true); }}>{busy === agent.id ? 'Publishing…' : 'Publish'}</button>)}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="agents" />
      {published.length > 0 && (
        <section class="card embed-card" aria-labelledby="embed-title">
          <h2 id="embed-title" class="card-title">Put the chat on your website</h2>
          <p class="muted small">Paste the tag into the pages where visitors should see the chat button, before <code>&lt;/body&gt;</code>. Optional attributes: <code>data-title</code>, <code>data-color</code>, <code>data-open</code>.</p>
          {published.map((a) => <EmbedBox key={a.id} id={`embed-${a.id}`} name={a.name} publicKey={a.public_key!} />)}
        </section>
      )}
      {confirming !== null && (
        <Modal title={`Unpublish “${confirming.name}”?`} onClose={() => setConfirming(null)}>
          <div class="stack">
            <p>Its public key <code>{confirming.public_key}</code> stops working at once: the chat disappears from every website that embeds it, and open visitor chats are cut. Publishing again gives a new key.</p>
            <div class="modal-actions">
              <button type="button" class="btn" onClick={() => setConfirming(null)}>Cancel</button>
              <button type="button" class="btn btn-danger" disabled={busy !== null} onClick={() => { void publish(confirming, false); }}>
                {busy === confirming.id ? 'Unpublishing…' : 'Unpublish'}
              </button>
            </div>
          </div>
        </Modal>
      )}
    </>
  );
}
