/** Small building blocks shared by the pages: dialogs, alerts, fields, dates and paged lists. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Page } from './api.js';

/** The text to show for a failure: the API's `error.message`, or a generic sentence for anything else. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return 'Something went wrong. Reload the page and try again.';
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** An RFC 3339 time in the reader's locale and time zone, e.g. "Nov 23, 2026, 6:22 PM". */
export function formatDate(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateFormat.format(d);
}

const sizeFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** A size in bytes as people read it: "812 B", "14.2 KB", "3.1 MB" (powers of 1,000, as file managers show). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${sizeFormat.format(bytes / 1000)} KB`;
  return `${sizeFormat.format(bytes / 1_000_000)} MB`;
}

/** An error for assistive technology to announce at once (`role="alert"`); nothing when there is none. */
export function ErrorAlert({ message }: { message: string | null }) {
  if (message === null || message === '') return null;
  return <div role="alert" class="alert">{message}</div>;
}

/**
 * A polite live region for confirmations ("Key revoked."). It is always in the page, also when empty,
 * so that screen readers announce what is later written into it.
 */
export function StatusMessage({ message }: { message: string }) {
  return <p role="status" class="flash">{message}</p>;
}

/** A labelled form control: the label, the control (given as children, with `id`), and an optional hint. */
export function Field({ id, label, hint, children }: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint !== undefined && <p id={`${id}-hint`} class="hint">{hint}</p>}
    </div>
  );
}

/**
 * The page's title, a level-1 heading that takes the focus when the page is opened from the navigation,
 * so keyboard and screen-reader users start reading at the new page.
 */
export function PageTitle({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useLayoutEffect(() => {
    if (document.activeElement === document.body || document.activeElement?.closest('nav') != null) ref.current?.focus();
  }, []);
  return <h1 id="page-title" tabIndex={-1} ref={ref}>{children}</h1>;
}

/**
 * A modal dialog on the native `<dialog>`: `showModal()` makes the rest of the page inert and moves the
 * focus into the dialog; Escape calls `onClose`; when the dialog goes away the focus returns to the
 * control that opened it (or, when that control is gone, to the page title).
 */
export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const close = useRef(onClose);
  close.current = onClose;

  useLayoutEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null;
    const onCancel = (e: Event) => {
      e.preventDefault();
      close.current();
    };
    dialog.addEventListener('cancel', onCancel);
    dialog.showModal();
    return () => {
      dialog.removeEventListener('cancel', onCancel);
      if (dialog.open) dialog.close();
      const target = opener?.isConnected ? opener : document.getElementById('page-title');
      target?.focus();
    };
  }, []);

  return (
    <dialog ref={ref} class="modal" aria-labelledby={titleId}>
      <h2 id={titleId} class="modal-title">{title}</h2>
      {children}
    </dialog>
  );
}

/**
 * A modal that confirms a destructive action: `children` says what happens, the danger button runs
 * `action` (showing `busyLabel` meanwhile), and the dialog ends with `onDone(true)` when it resolved or
 * `onDone(false)` on Cancel / Escape. When `action` throws, its message (API.md's error shape, through
 * {@link messageOf}) is shown in the dialog and the button can be pressed again.
 */
export function ConfirmDialog({ title, confirmLabel, busyLabel, action, onDone, children }: {
  title: string; confirmLabel: string; busyLabel: string; action: () => Promise<unknown>;
  onDone: (done: boolean) => void; children: ComponentChildren;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function run() {
    setBusy(true);
    setError(null);
    try {
      await action();
      onDone(true);
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }

  return (
    <Modal title={title} onClose={() => onDone(false)}>
      <div class="stack">
        <ErrorAlert message={error} />
        {children}
        <div class="modal-actions">
          <button type="button" class="btn" onClick={() => onDone(false)}>Cancel</button>
          <button type="button" class="btn btn-danger" onClick={() => { void run(); }} disabled={busy}>{busy ? busyLabel : confirmLabel}</button>
        </div>
      </div>
    </Modal>
  );
}

/** A list endpoint read page by page. */
export interface PagedList<T> {
  /** Null until the first page has arrived. */
  items: T[] | null;
  hasMore: boolean;
  loading: boolean;
  error: string | null;
  /** Reads the first page again. */
  reload: () => void;
  /** Appends the next page. */
  loadMore: () => void;
}

/**
 * Reads a list endpoint (`{data, has_more}`, `?limit=&after=`): the first page now and whenever `key`
 * changes (another organization), the next ones on demand. Answers that arrive after a newer request
 * was started are dropped.
 */
export function usePagedList<T>(load: (after: string | undefined) => Promise<Page<T>>, idOf: (item: T) => string, key: string): PagedList<T> {
  const [items, setItems] = useState<T[] | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const seq = useRef(0);
  const loader = useRef({ load, idOf });
  loader.current = { load, idOf };
  const current = useRef<T[] | null>(null);
  current.current = items;

  const fetchPage = useCallback(async (append: boolean) => {
    const mine = ++seq.current;
    setLoading(true);
    setError(null);
    try {
      const last = append ? current.current?.at(-1) : undefined;
      const page = await loader.current.load(last === undefined ? undefined : loader.current.idOf(last));
      if (mine !== seq.current) return;
      setItems(append ? [...(current.current ?? []), ...page.data] : page.data);
      setHasMore(page.has_more);
    } catch (err) {
      if (mine === seq.current) setError(messageOf(err));
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, []);

  useEffect(() => { void fetchPage(false); }, [key, fetchPage]);
  // A control that had the focus can vanish with a reload (the Revoke button of a key just revoked, the
  // row of a member just removed); the focus then falls to the page body. Put it on the page title, so
  // keyboard users continue from the page they are on.
  // A layout effect: the focus moves in the same task as the row goes, with no frame left on <body>.
  useLayoutEffect(() => {
    if (items !== null && document.activeElement === document.body) document.getElementById('page-title')?.focus();
  }, [items]);

  return { items, hasMore, loading, error, reload: () => { void fetchPage(false); }, loadMore: () => { void fetchPage(true); } };
}

/** The query string of a list request. */
export function pageQuery(after: string | undefined, limit = 100): string {
  return after === undefined ? `?limit=${limit}` : `?limit=${limit}&after=${encodeURIComponent(after)}`;
}

/** The "Load more" row under a list that has more, and the loading and error states of a list. */
export function ListFooter<T>({ list, noun }: { list: PagedList<T>; noun: string }) {
  return (
    <>
      <ErrorAlert message={list.error} />
      {list.items === null && list.loading && <p class="muted" aria-busy="true">Loading {noun}…</p>}
      {list.hasMore && (
        <div class="list-more">
          <button type="button" class="btn" onClick={list.loadMore} disabled={list.loading}>{list.loading ? 'Loading…' : `Show more ${noun}`}</button>
        </div>
      )}
    </>
  );
}

/**
 * A secret shown this once (a new API key, a webhook signing secret), with a copy button that takes the
 * focus: `warning` is the bold line of the callout above it, `detail` the sentence under that, `label`
 * the field's label. `onDone` is the Done button.
 */
export function SecretView({ secret, label, warning, detail, onDone }: { secret: string; label: string; warning: string; detail: string; onDone: () => void }) {
  const input = useRef<HTMLTextAreaElement>(null);
  const copyButton = useRef<HTMLButtonElement>(null);
  const [copied, setCopied] = useState('');
  useLayoutEffect(() => { copyButton.current?.focus(); }, []);

  async function copy() {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard access (an insecure origin, a refused permission): select the text and use the
      // older command, which works from a click.
      input.current?.select();
      setCopied(document.execCommand('copy') ? 'Copied to the clipboard.' : 'Copying did not work: the secret is selected, copy it with Ctrl+C or ⌘C.');
    }
  }

  return (
    <div class="stack">
      <div class="callout callout-warning">
        <strong>{warning}</strong>
        <p>{detail}</p>
      </div>
      <Field id="new-secret" label={label}>
        <div class="copy-row">
          <textarea id="new-secret" ref={input} readOnly rows={2} value={secret} class="secret" spellcheck={false}
            autocomplete="off" onFocus={(e) => e.currentTarget.select()} />
          <button type="button" class="btn" ref={copyButton} onClick={copy}>Copy</button>
        </div>
      </Field>
      <StatusMessage message={copied} />
      <div class="modal-actions">
        <button type="button" class="btn btn-primary" onClick={onDone}>Done</button>
      </div>
    </div>
  );
}
