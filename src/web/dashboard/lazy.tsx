/**
 * Pages loaded on demand: each page is its own file of the build (esbuild code splitting), fetched by a
 * dynamic import() the first time it is opened, then kept. While it loads the page area says so; when it
 * cannot be loaded (offline, or a new version of Parley replaced the files) it says that, with a reload.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * A component that renders the page `load` resolves to, loading it on first use. `load` is a function
 * around `import('./pages/x.js')`, so the bundler makes the page a separate file.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function lazyPage<C extends (props: any) => JSX.Element>(load: () => Promise<C>): (props: Parameters<C>[0] & { key?: string }) => JSX.Element {
  type P = Parameters<C>[0];
  let loaded: C | undefined;
  let pending: Promise<C> | undefined;
  return function LazyPage(props: P & { key?: string }) {
    const [, setVersion] = useState(0);
    const [failed, setFailed] = useState(false);
    useEffect(() => {
      if (loaded !== undefined) return undefined;
      let live = true;
      (pending ??= load()).then(
        (page) => { loaded = page; if (live) setVersion((v) => v + 1); },
        () => { pending = undefined; if (live) setFailed(true); },
      );
      return () => { live = false; };
    }, []);
    if (loaded !== undefined) {
      const Loaded = loaded;
      return <Loaded {...props} />;
    }
    if (failed) {
      return (
        <div role="alert" class="alert">
          This page could not be loaded. Check your connection, then{' '}
          <button type="button" class="btn btn-sm" onClick={() => location.reload()}>Reload</button>
        </div>
      );
    }
    return <p class="muted" aria-busy="true">Loading…</p>;
  };
}
