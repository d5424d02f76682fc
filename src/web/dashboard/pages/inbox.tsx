/**
 * The operator console's inbox: the organization's conversations, live (src/web/dashboard/inbox.ts),
 * filtered by status, agent and text, with conversations waiting for a person first; and, beside the
 * list, the conversation chosen (`/dashboard/inbox/conv_...`, pages/conversation.tsx).
 */
import { useMemo, useState } from 'preact/hooks';
import type { ConversationStatus, Organization } from '../api.js';
import type { Inbox, InboxRow, InboxSnapshot } from '../inbox.js';
import { conversationOf, linkTo, pathOf, useLocation } from '../router.js';
import type { Session } from '../session.js';
import { ErrorAlert, PageTitle } from '../ui.js';
import { ConversationView } from './conversation.js';
import { ago, Avatar, LiveBadge, StatusBadge, visitorName } from './inbox-parts.js';

type StatusFilter = 'all' | ConversationStatus;

const FILTERS: ReadonlyArray<[StatusFilter, string]> = [
  ['all', 'All'], ['pending_handoff', 'Waiting'], ['handed_off', 'With a person'], ['active', 'Agent'], ['closed', 'Closed'],
];

const WHO: Record<string, string> = { visitor: '', agent: 'Agent: ', operator: 'Operator: ' };

/** See the file's comment. */
export function InboxPage({ session, org, inbox, snapshot }: { session: Session; org: Organization; inbox: Inbox; snapshot: InboxSnapshot }) {
  const { pathname } = useLocation();
  const open = conversationOf(pathname);
  const [status, setStatus] = useState<StatusFilter>('all');
  const [agentId, setAgentId] = useState('');
  const [text, setText] = useState('');

  const counts = useMemo(() => {
    const c: Record<StatusFilter, number> = { all: 0, pending_handoff: 0, handed_off: 0, active: 0, closed: 0 };
    for (const r of snapshot.rows) { c.all++; c[r.conversation.status]++; }
    return c;
  }, [snapshot.rows]);

  const rows = useMemo(() => {
    const needle = text.trim().toLowerCase();
    return snapshot.rows.filter((r) => {
      if (status !== 'all' && r.conversation.status !== status) return false;
      if (agentId !== '' && r.conversation.agent_id !== agentId) return false;
      if (needle === '') return true;
      const agent = snapshot.agents.get(r.conversation.agent_id)?.name ?? '';
      return [visitorName(r.conversation), r.conversation.id, agent, r.preview?.content ?? '', JSON.stringify(r.conversation.metadata)]
        .some((s) => s.toLowerCase().includes(needle));
    });
  }, [snapshot.rows, snapshot.agents, status, agentId, text]);

  const agents = useMemo(() => [...snapshot.agents.values()].sort((a, b) => a.name.localeCompare(b.name)), [snapshot.agents]);

  return (
    <div class={open === null ? 'inbox' : 'inbox inbox-open'}>
      <section class="inbox-list" aria-labelledby="page-title">
        <div class="inbox-head">
          <PageTitle>Inbox</PageTitle>
          <LiveBadge state={snapshot.live} reason={snapshot.liveReason} />
        </div>
        <div class="inbox-filters">
          <div class="pills" role="group" aria-label="Status">
            {FILTERS.map(([value, label]) => (
              <button key={value} type="button" class={`pill${value === 'pending_handoff' && counts.pending_handoff > 0 ? ' pill-alert' : ''}`}
                aria-pressed={status === value} onClick={() => setStatus(value)}>
                {label}<span class="pill-count">{counts[value]}</span>
              </button>
            ))}
          </div>
          <div class="inbox-search">
            <label class="visually-hidden" for="inbox-agent">Agent</label>
            <select id="inbox-agent" class="select-sm" value={agentId} onChange={(e) => setAgentId(e.currentTarget.value)}>
              <option value="">All agents</option>
              {agents.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
            </select>
            <label class="visually-hidden" for="inbox-text">Search conversations</label>
            <input id="inbox-text" type="search" class="input-sm" placeholder="Search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </div>
        </div>
        <ErrorAlert message={snapshot.error} />
        {!snapshot.loaded && snapshot.error === null && <p class="inbox-note muted" aria-busy="true">Loading conversations…</p>}
        {snapshot.loaded && rows.length === 0 && (
          <div class="inbox-note">
            <p><strong>{snapshot.rows.length === 0 ? 'No conversations yet.' : 'Nothing matches.'}</strong></p>
            <p class="muted small">{snapshot.rows.length === 0 ? `Conversations with the agents of ${org.name} show up here as they happen.` : 'Change the filters to see more.'}</p>
          </div>
        )}
        <ul class="conv-list" aria-label="Conversations">
          {rows.map((r) => <Row key={r.conversation.id} row={r} agentName={snapshot.agents.get(r.conversation.agent_id)?.name ?? null} current={r.conversation.id === open} />)}
        </ul>
        {snapshot.hasMore && (
          <div class="list-more"><button type="button" class="btn btn-sm" onClick={() => { void inbox.loadMore(); }}>Load older conversations</button></div>
        )}
      </section>
      <div class="inbox-detail">
        {open === null
          ? (
            <div class="conv-empty">
              <svg class="conv-empty-icon" viewBox="0 0 48 48" aria-hidden="true">
                <path d="M8 10a4 4 0 0 1 4-4h18a4 4 0 0 1 4 4v12a4 4 0 0 1-4 4H18l-7 6v-6h1a4 4 0 0 1-4-4z" />
                <path class="conv-empty-back" d="M38 18h2a4 4 0 0 1 4 4v12a4 4 0 0 1-4 4h-1v6l-7-6H24a4 4 0 0 1-4-4v-4" />
              </svg>
              <p><strong>{snapshot.waiting > 0 ? `${snapshot.waiting} ${snapshot.waiting === 1 ? 'visitor is' : 'visitors are'} waiting for a person` : 'Pick a conversation'}</strong></p>
              <p class="muted small">Choose one on the left to follow it live, take it over and reply.</p>
            </div>
          )
          : <ConversationView key={open} session={session} conversationId={open} inbox={inbox} agents={snapshot.agents} />}
      </div>
    </div>
  );
}

function Row({ row, agentName, current }: { row: InboxRow; agentName: string | null; current: boolean }) {
  const c = row.conversation;
  const name = visitorName(c);
  const when = row.preview !== null && row.preview.created_at > c.updated_at ? row.preview.created_at : c.updated_at;
  return (
    <li>
      <a href={pathOf('inbox', c.id)} onClick={linkTo('inbox', c.id)} class={`conv-item conv-${c.status}`} aria-current={current ? 'page' : undefined} data-conversation={c.id}>
        <Avatar name={name} />
        <span class="conv-item-main">
          <span class="conv-item-top">
            <span class="conv-item-name">{name}</span>
            <time class="conv-item-time" dateTime={when}>{ago(when)}</time>
          </span>
          <span class="conv-item-preview">
            {row.answering ? <em>Agent is writing…</em> : row.preview === null ? <span class="muted">…</span> : <>{WHO[row.preview.role]}{row.preview.content}</>}
          </span>
          <span class="conv-item-tags">
            <StatusBadge status={c.status} />
            {agentName !== null && <span class="conv-item-agent">{agentName}</span>}
          </span>
        </span>
      </a>
    </li>
  );
}
