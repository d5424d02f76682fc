import './shared.js';
import { useEffect, useState } from 'preact/hooks';
import type { Organization, User } from './api.js';
import { Inbox, type InboxSnapshot } from './inbox.js';
import { Logo } from './logo.js';
import { lazyPage } from './lazy.js';
import { InboxPage } from './pages/inbox.js';
import { InvitationsNotice } from './pages/invitations.js';
import { OrganizationsPage } from './pages/organizations.js';
import { canManage, roleLabel } from './pages/roles.js';
import { SignInPage } from './pages/sign-in.js';
import { detailOf, linkTo, navigate, pathOf, useLocation, usePage, type PageName } from './router.js';

// The inbox, where everyone lands, comes with the entry; the other pages are loaded when first opened, by
// section (pages/*-section.ts). scripts/build-web.mjs prints the sizes.
const ApiKeysPage = lazyPage(() => import('./pages/settings-section.js').then((m) => m.ApiKeysPage));
const AgentsPage = lazyPage(() => import('./pages/build-section.js').then((m) => m.AgentsPage));
const AgentEditorPage = lazyPage(() => import('./pages/build-section.js').then((m) => m.AgentEditorPage));
const KnowledgePage = lazyPage(() => import('./pages/build-section.js').then((m) => m.KnowledgePage));
const KnowledgeBasePage = lazyPage(() => import('./pages/build-section.js').then((m) => m.KnowledgeBasePage));
const UsagePage = lazyPage(() => import('./pages/usage.js').then((m) => m.UsagePage));
const PreviewPage = lazyPage(() => import('./pages/build-section.js').then((m) => m.PreviewPage));
const MembersPage = lazyPage(() => import('./pages/settings-section.js').then((m) => m.MembersPage));
const WebhooksPage = lazyPage(() => import('./pages/settings-section.js').then((m) => m.WebhooksPage));
import type { Session, SessionState } from './session.js';

/** The session's state, re-rendering on every change (also one made before the effect subscribed). */
function useSessionState(session: Session): SessionState {
  const [state, setState] = useState(session.state);
  useEffect(() => {
    setState(session.state);
    return session.subscribe(setState);
  }, [session]);
  return state;
}

/**
 * The dashboard: the sign-in page while nobody is signed in, the organization picker while no
 * organization is chosen, and otherwise the page of the address bar inside the shell.
 */
export function App({ session }: { session: Session }) {
  const state = useSessionState(session);
  const page = usePage();
  const [signingOut, setSigningOut] = useState(false);

  async function signOut() {
    setSigningOut(true);
    try {
      await session.signOut();
    } finally {
      setSigningOut(false);
    }
  }

  if (state.status === 'starting') {
    return (
      <div class="splash" aria-busy="true">
        <Logo />
        <p class="muted">Loading…</p>
      </div>
    );
  }
  if (state.status === 'unreachable') {
    return (
      <main class="auth">
        <div class="auth-card">
          <Logo />
          <h1>Parley is not reachable</h1>
          <div role="alert" class="alert">{state.message}</div>
          <button type="button" class="btn btn-primary btn-block" onClick={() => { void session.start(); }}>Try again</button>
        </div>
      </main>
    );
  }
  if (state.status === 'signed-out') return <SignInPage session={session} notice={state.notice} />;
  if (state.org === null || page === 'organizations') {
    return (
      <OrganizationsPage session={session} user={state.user} organizations={state.organizations} current={state.org}
        onSignOut={signOut} signingOut={signingOut} />
    );
  }
  return (
    <Shell session={session} user={state.user} organizations={state.organizations} org={state.org} page={page}
      onSignOut={signOut} signingOut={signingOut} />
  );
}

const TITLES: Record<PageName, string> = {
  inbox: 'Inbox', keys: 'API keys', agents: 'Agents', agent: 'Agent', knowledge: 'Knowledge', 'knowledge-base': 'Knowledge base', usage: 'Usage', members: 'Members', webhooks: 'Webhooks', organizations: 'Organizations', preview: 'Widget preview', home: 'Dashboard',
};

/**
 * The organization's inbox (src/web/dashboard/inbox.ts), live while the shell is shown: the inbox page
 * reads it, and the navigation shows how many conversations wait for a person on every page.
 */
function useInbox(session: Session, orgId: string): { inbox: Inbox | null; snapshot: InboxSnapshot | null } {
  const [state, setState] = useState<{ inbox: Inbox | null; snapshot: InboxSnapshot | null }>({ inbox: null, snapshot: null });
  useEffect(() => {
    const inbox = new Inbox(session, orgId);
    setState({ inbox, snapshot: inbox.snapshot });
    const unsubscribe = inbox.subscribe((snapshot) => setState({ inbox, snapshot }));
    inbox.start();
    return () => { unsubscribe(); inbox.stop(); };
  }, [session, orgId]);
  return state;
}

/** The header (organization, person, sign-out), the section tabs, and the current page. */
function Shell({ session, user, organizations, org, page, onSignOut, signingOut }: {
  session: Session; user: User; organizations: Organization[]; org: Organization; page: PageName;
  onSignOut: () => void; signingOut: boolean;
}) {
  const manager = canManage(org);
  const { inbox, snapshot } = useInbox(session, org.id);
  const detail = detailOf(useLocation().pathname);
  // The mount itself, and the pages an operator may not use (keys, webhooks, usage, the agent editor), open the inbox.
  const shown: PageName = page === 'home' || ((page === 'keys' || page === 'webhooks' || page === 'usage' || page === 'agent') && !manager) ? 'inbox' : page;
  useEffect(() => { if (shown !== page) navigate(shown, true); }, [shown, page]);
  const waiting = snapshot?.waiting ?? 0;
  useEffect(() => {
    document.title = `${waiting > 0 && shown === 'inbox' ? `(${waiting}) ` : ''}${TITLES[shown]} · ${org.name} · Parley`;
  }, [shown, org.name, waiting]);

  const tabs: Array<[PageName, string]> = [
    ['inbox', 'Inbox'], ...(manager ? [['keys', 'API keys'] as [PageName, string]] : []), ['agents', 'Agents'], ['knowledge', 'Knowledge'],
    ...(manager ? [['usage', 'Usage'] as [PageName, string]] : []), ['members', 'Members'],
    ...(manager ? [['webhooks', 'Webhooks'] as [PageName, string]] : []),
  ];
  /** The tab a page belongs to (an agent's editor is under Agents, a knowledge base under Knowledge). */
  const tabOf: Partial<Record<PageName, PageName>> = { preview: 'agents', agent: 'agents', 'knowledge-base': 'knowledge' };

  return (
    <div class="shell">
      <a class="skip-link" href="#main">Skip to content</a>
      <header class="topbar">
        <div class="topbar-inner">
          <a href={pathOf('home')} class="brand" onClick={linkTo('home')}><Logo compact /></a>
          <div class="org-current">
            <span class="org-name" title={org.name}>{org.name}</span>
            <span class="badge">{roleLabel(org.role)}</span>
            {organizations.length > 1 && (
              <a href={pathOf('organizations')} class="link-quiet" onClick={linkTo('organizations')} aria-label="Switch organization">Switch</a>
            )}
            <InvitationsNotice session={session} />
          </div>
          <div class="account">
            <span class="account-email" title={user.email}>{user.email}</span>
            <button type="button" class="btn btn-sm" onClick={onSignOut} disabled={signingOut}>{signingOut ? 'Signing out…' : 'Sign out'}</button>
          </div>
        </div>
        <nav class="tabs" aria-label="Sections">
          <div class="tabs-inner">
            {tabs.map(([p, label]) => (
              <a key={p} href={pathOf(p)} class="tab" onClick={linkTo(p)} aria-current={p === (tabOf[shown] ?? shown) ? 'page' : undefined}>
                {label}
                {p === 'inbox' && waiting > 0 && (
                  <span class="tab-count" data-testid="waiting-count">
                    <span class="visually-hidden">, </span>{waiting > 99 ? '99+' : waiting}<span class="visually-hidden"> waiting for a person</span>
                  </span>
                )}
              </a>
            ))}
          </div>
        </nav>
      </header>
      <main id="main" class={shown === 'inbox' ? 'container container-inbox' : 'container'} tabIndex={-1}>
        {shown === 'inbox' && inbox !== null && snapshot !== null && <InboxPage key={org.id} session={session} org={org} inbox={inbox} snapshot={snapshot} />}
        {shown === 'keys' && <ApiKeysPage key={org.id} session={session} org={org} />}
        {shown === 'agents' && <AgentsPage key={org.id} session={session} org={org} />}
        {shown === 'agent' && detail !== null && <AgentEditorPage key={`${org.id}/agent`} session={session} org={org} agentId={detail === 'new' ? null : detail} />}
        {shown === 'knowledge' && <KnowledgePage key={org.id} session={session} org={org} />}
        {shown === 'knowledge-base' && detail !== null && <KnowledgeBasePage key={`${org.id}/${detail}`} session={session} org={org} kbId={detail} />}
        {shown === 'usage' && <UsagePage key={org.id} session={session} org={org} />}
        {shown === 'preview' && <PreviewPage key={org.id} session={session} org={org} />}
        {shown === 'members' && <MembersPage key={org.id} session={session} org={org} user={user} />}
        {shown === 'webhooks' && <WebhooksPage key={org.id} session={session} org={org} />}
      </main>
    </div>
  );
}
