import type { Agent, Organization, Page } from '../api.js';
import type { Session } from '../session.js';
import { formatDate, ListFooter, pageQuery, PageTitle, usePagedList } from '../ui.js';

const agentId = (a: Agent) => a.id;

/** The organization's agents with their model and whether they are published. */
export function AgentsPage({ session, org }: { session: Session; org: Organization }) {
  const list = usePagedList<Agent>((after) => session.request<Page<Agent>>('GET', `/v1/agents${pageQuery(after)}`), agentId, org.id);

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Agents</PageTitle>
          <p class="muted">The agents of {org.name}. Create and change them with the API (<code>/v1/agents</code>).</p>
        </div>
      </div>
      {list.items !== null && list.items.length === 0 && (
        <div class="empty">
          <p><strong>No agents yet.</strong></p>
          <p class="muted">Create one with <code>POST /v1/agents</code>.</p>
        </div>
      )}
      {list.items !== null && list.items.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Agents of {org.name}</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Model</th><th scope="col">Public chat</th><th scope="col">Created</th></tr>
            </thead>
            <tbody>
              {list.items.map((agent) => (
                <tr key={agent.id}>
                  <th scope="row" data-label="Name" class="cell-strong">
                    {agent.name}
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
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="agents" />
    </>
  );
}
