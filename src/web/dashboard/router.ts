/**
 * The dashboard's pages are paths under /dashboard (the server answers every one of them with the same
 * index.html), switched with the History API so that reloads, bookmarks and the back button work.
 */
import { useEffect, useState } from 'preact/hooks';

/** Where the dashboard is mounted. */
export const BASE = '/dashboard';

/**
 * The pages: `agent` is an agent's editor (`/dashboard/agents/new`, `/dashboard/agents/agt_...`),
 * `knowledge-base` one knowledge base (`/dashboard/knowledge/kb_...`).
 */
export type PageName = 'inbox' | 'keys' | 'agents' | 'agent' | 'knowledge' | 'knowledge-base' | 'usage' | 'members' | 'webhooks' | 'organizations' | 'preview' | 'home';

const PAGES: readonly PageName[] = ['inbox', 'keys', 'agents', 'knowledge', 'usage', 'members', 'webhooks', 'organizations', 'preview'];

/** Detail pages: the path segment they live under, and the ids they take. */
const DETAIL: Partial<Record<PageName, { under: string; id: RegExp }>> = {
  agent: { under: 'agents', id: /^(new|agt_[0-9A-Za-z]{1,64})$/ },
  'knowledge-base': { under: 'knowledge', id: /^kb_[0-9A-Za-z]{1,64}$/ },
};

/** The part of a location path after the mount, without slashes at the ends. */
function restOf(pathname: string): string {
  return pathname.startsWith(`${BASE}/`) ? pathname.slice(BASE.length + 1).replace(/\/+$/, '') : '';
}

/**
 * The page of a location path: `/dashboard/keys` is `keys`, `/dashboard/inbox/conv_...` is `inbox` (with
 * that conversation open); the mount itself and anything unknown is `home`.
 */
export function pageOf(pathname: string): PageName {
  const rest = restOf(pathname);
  if (conversationOf(pathname) !== null) return 'inbox';
  if (detailOf(pathname) !== null) return rest.startsWith('agents/') ? 'agent' : 'knowledge-base';
  return (PAGES as readonly string[]).includes(rest) ? rest as PageName : 'home';
}

/** The conversation open in the inbox (`/dashboard/inbox/conv_...`), or null. */
export function conversationOf(pathname: string): string | null {
  const m = /^inbox\/(conv_[0-9A-Za-z]{1,64})$/.exec(restOf(pathname));
  return m === null ? null : m[1]!;
}

/** The id of a detail page's path: `new` or `agt_...` under agents/, `kb_...` under knowledge/; else null. */
export function detailOf(pathname: string): string | null {
  const rest = restOf(pathname);
  for (const { under, id } of Object.values(DETAIL)) {
    if (rest.startsWith(`${under}/`) && id.test(rest.slice(under.length + 1))) return rest.slice(under.length + 1);
  }
  return null;
}

/**
 * The path of a page; `detail` is the conversation of the inbox, or the query string of a page
 * (`?agent=...` of the preview, `?endpoint=whe_...` of the webhooks page).
 */
export function pathOf(page: PageName, detail?: string): string {
  if (page === 'home') return BASE;
  const under = DETAIL[page]?.under;
  if (under !== undefined) return `${BASE}/${under}/${detail ?? 'new'}`;
  if (detail === undefined) return `${BASE}/${page}`;
  return detail.startsWith('?') ? `${BASE}/${page}${detail}` : `${BASE}/${page}/${detail}`;
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => { for (const fn of listeners) fn(); });

/** Goes to `page` (with `detail`, see pathOf); `replace` rewrites the current history entry instead of adding one. */
export function navigate(page: PageName, replace = false, detail?: string): void {
  const path = pathOf(page, detail);
  if (location.pathname + location.search !== path) {
    if (replace) history.replaceState(null, '', path);
    else history.pushState(null, '', path);
  }
  for (const fn of listeners) fn();
}

/** The current location's path and query string, re-rendering on navigation. */
export function useLocation(): { pathname: string; search: string } {
  const read = () => ({ pathname: location.pathname, search: location.search });
  const [where, setWhere] = useState(read);
  useEffect(() => {
    const update = () => setWhere((old) => {
      const now = read();
      return now.pathname === old.pathname && now.search === old.search ? old : now;
    });
    listeners.add(update);
    return () => { listeners.delete(update); };
  }, []);
  return where;
}

/** The current page, re-rendering on navigation. */
export function usePage(): PageName {
  return pageOf(useLocation().pathname);
}

/**
 * A click handler for a link to `page`: a plain click navigates in place; a click with a modifier key
 * (new tab, new window) is left to the browser, which loads the same path from the server.
 */
export function linkTo(page: PageName, detail?: string): (e: MouseEvent) => void {
  return (e) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(page, false, detail);
  };
}
