/**
 * The dashboard's pages are paths under /dashboard (the server answers every one of them with the same
 * index.html), switched with the History API so that reloads, bookmarks and the back button work.
 */
import { useEffect, useState } from 'preact/hooks';

/** Where the dashboard is mounted. */
export const BASE = '/dashboard';

export type PageName = 'keys' | 'agents' | 'members' | 'organizations' | 'home';

const PAGES: readonly PageName[] = ['keys', 'agents', 'members', 'organizations'];

/** The page of a location path: `/dashboard/keys` is `keys`; the mount itself and anything unknown is `home`. */
export function pageOf(pathname: string): PageName {
  const rest = pathname.startsWith(`${BASE}/`) ? pathname.slice(BASE.length + 1).replace(/\/+$/, '') : '';
  return (PAGES as readonly string[]).includes(rest) ? rest as PageName : 'home';
}

/** The path of a page. */
export function pathOf(page: PageName): string {
  return page === 'home' ? BASE : `${BASE}/${page}`;
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => { for (const fn of listeners) fn(); });

/** Goes to `page`; `replace` rewrites the current history entry instead of adding one. */
export function navigate(page: PageName, replace = false): void {
  const path = pathOf(page);
  if (location.pathname !== path) {
    if (replace) history.replaceState(null, '', path);
    else history.pushState(null, '', path);
  }
  for (const fn of listeners) fn();
}

/** The current page, re-rendering on navigation. */
export function usePage(): PageName {
  const [page, setPage] = useState(() => pageOf(location.pathname));
  useEffect(() => {
    const update = () => setPage(pageOf(location.pathname));
    listeners.add(update);
    return () => { listeners.delete(update); };
  }, []);
  return page;
}

/**
 * A click handler for a link to `page`: a plain click navigates in place; a click with a modifier key
 * (new tab, new window) is left to the browser, which loads the same path from the server.
 */
export function linkTo(page: PageName): (e: MouseEvent) => void {
  return (e) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(page);
  };
}
