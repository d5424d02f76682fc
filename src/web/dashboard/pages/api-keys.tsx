import '../shared.js';
import { useState } from 'preact/hooks';
import type { ApiKey, IssuedApiKey, Organization, Page } from '../api.js';
import type { Session } from '../session.js';
import { ConfirmDialog, ErrorAlert, Field, formatDate, ListFooter, messageOf, Modal, pageQuery, PageTitle, SecretView, StatusMessage, usePagedList } from '../ui.js';

type Dialog = { kind: 'create' } | { kind: 'rotate'; key: ApiKey } | { kind: 'revoke'; key: ApiKey } | null;

/** Where a key stands: active, retiring (rotated, in its grace period), expired or revoked. */
function statusOf(key: ApiKey): { label: string; tone: 'active' | 'warning' | 'muted'; detail: string | null; usable: boolean } {
  if (key.revoked_at !== null) return { label: 'Revoked', tone: 'muted', detail: formatDate(key.revoked_at), usable: false };
  if (key.expires_at !== null) {
    return Date.parse(key.expires_at) > Date.now()
      ? { label: 'Retiring', tone: 'warning', detail: `until ${formatDate(key.expires_at)}`, usable: true }
      : { label: 'Expired', tone: 'muted', detail: formatDate(key.expires_at), usable: false };
  }
  return { label: 'Active', tone: 'active', detail: null, usable: true };
}

const keyId = (k: ApiKey) => k.id;

/** The organization's API keys: list, create (secret shown once), rotate with a grace period, revoke. */
export function ApiKeysPage({ session, org }: { session: Session; org: Organization }) {
  const list = usePagedList<ApiKey>((after) => session.request<Page<ApiKey>>('GET', `/v1/api-keys${pageQuery(after)}`), keyId, org.id);
  const [dialog, setDialog] = useState<Dialog>(null);
  const [flash, setFlash] = useState('');

  function done(message: string | null) {
    setDialog(null);
    if (message !== null) {
      setFlash(message);
      list.reload();
    }
  }

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>API keys</PageTitle>
          <p class="muted">Keys let your programs call the Parley API as {org.name}. Keep them on your server, never in a browser or an app.</p>
        </div>
        <button type="button" class="btn btn-primary" onClick={() => { setFlash(''); setDialog({ kind: 'create' }); }}>Create key</button>
      </div>
      <StatusMessage message={flash} />
      {list.items !== null && list.items.length === 0 && (
        <div class="empty">
          <p><strong>No API keys yet.</strong></p>
          <p class="muted">Create one to call the API from your programs.</p>
        </div>
      )}
      {list.items !== null && list.items.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">API keys of {org.name}</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
            </thead>
            <tbody>
              {list.items.map((key) => {
                const status = statusOf(key);
                return (
                  <tr key={key.id} class={status.usable ? undefined : 'row-muted'}>
                    <th scope="row" data-label="Name" class="cell-strong">{key.name}</th>
                    <td data-label="Key"><code>sk_…{key.last4}</code></td>
                    <td data-label="Created">{formatDate(key.created_at)}</td>
                    <td data-label="Status">
                      <div>
                        <span class={`badge badge-${status.tone}`}>{status.label}</span>
                        {status.detail !== null && <span class="cell-detail">{status.detail}</span>}
                      </div>
                    </td>
                    <td class="cell-actions">
                      {status.usable && (
                        <div class="actions">
                          {key.expires_at === null && (
                            <button type="button" class="btn btn-sm" aria-label={`Rotate ${key.name}`} onClick={() => { setFlash(''); setDialog({ kind: 'rotate', key }); }}>Rotate</button>
                          )}
                          <button type="button" class="btn btn-sm btn-danger-quiet" aria-label={`Revoke ${key.name}`} onClick={() => { setFlash(''); setDialog({ kind: 'revoke', key }); }}>Revoke</button>
                        </div>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="keys" />
      {dialog?.kind === 'create' && <IssueKeyDialog session={session} onDone={done} />}
      {dialog?.kind === 'rotate' && <IssueKeyDialog session={session} rotating={dialog.key} onDone={done} />}
      {dialog?.kind === 'revoke' && <RevokeDialog session={session} apiKey={dialog.key} onDone={done} />}
    </>
  );
}

/** Grace periods offered when rotating, s (API: 0 to 30 days). */
const GRACE_PERIODS: ReadonlyArray<[number, string]> = [
  [0, 'No: it stops at once'],
  [3600, 'For 1 hour'],
  [86_400, 'For 1 day'],
  [7 * 86_400, 'For 7 days'],
  [30 * 86_400, 'For 30 days'],
];

/**
 * Creates a key (or, with `rotating`, replaces one, with an optional grace period for the old secret),
 * then shows the new secret once. `onDone` gets the confirmation to show, or null when nothing changed.
 */
function IssueKeyDialog({ session, rotating, onDone }: { session: Session; rotating?: ApiKey; onDone: (message: string | null) => void }) {
  const [name, setName] = useState('');
  const [grace, setGrace] = useState(0);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [issued, setIssued] = useState<IssuedApiKey | null>(null);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setIssued(rotating === undefined
        ? await session.request<IssuedApiKey>('POST', '/v1/api-keys', { name: name.trim() })
        : await session.request<IssuedApiKey>('POST', `/v1/api-keys/${encodeURIComponent(rotating.id)}/rotate`, { grace_period_seconds: grace }));
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  if (issued !== null) {
    const message = rotating === undefined ? `Key “${issued.name}” created.` : `Key “${issued.name}” rotated.`;
    return (
      <Modal title={rotating === undefined ? 'Your new API key' : 'Your rotated API key'} onClose={() => onDone(message)}>
        <SecretView secret={issued.secret} label={`Secret key of “${issued.name}”`} onDone={() => onDone(message)}
          warning="Copy the key now: you will not see it again."
          detail="Parley stores only a hash of it, so this is the only time it is shown. Keep it in your secret manager, on your server." />
      </Modal>
    );
  }

  return (
    <Modal title={rotating === undefined ? 'Create an API key' : `Rotate “${rotating.name}”`} onClose={() => onDone(null)}>
      <form onSubmit={submit} class="stack">
        <ErrorAlert message={error} />
        {rotating === undefined
          ? (
            <Field id="key-name" label="Name" hint="What the key is for, e.g. production or staging.">
              <input id="key-name" type="text" required maxLength={200} value={name} aria-describedby="key-name-hint"
                onInput={(e) => setName(e.currentTarget.value)} />
            </Field>
          )
          : (
            <>
              <p>A new key named “{rotating.name}” replaces the key ending in <code>{rotating.last4}</code>.</p>
              <Field id="grace" label="Keep the old key working?" hint="Time to deploy the new key before the old one is refused.">
                <select id="grace" value={String(grace)} aria-describedby="grace-hint" onChange={(e) => setGrace(Number(e.currentTarget.value))}>
                  {GRACE_PERIODS.map(([seconds, label]) => <option key={seconds} value={String(seconds)}>{label}</option>)}
                </select>
              </Field>
            </>
          )}
        <div class="modal-actions">
          <button type="button" class="btn" onClick={() => onDone(null)}>Cancel</button>
          <button type="submit" class="btn btn-primary" disabled={busy}>
            {rotating === undefined ? (busy ? 'Creating…' : 'Create key') : (busy ? 'Rotating…' : 'Rotate key')}
          </button>
        </div>
      </form>
    </Modal>
  );
}

/** Confirms and revokes a key. */
function RevokeDialog({ session, apiKey, onDone }: { session: Session; apiKey: ApiKey; onDone: (message: string | null) => void }) {
  return (
    <ConfirmDialog title={`Revoke “${apiKey.name}”?`} confirmLabel="Revoke key" busyLabel="Revoking…"
      action={() => session.request<void>('DELETE', `/v1/api-keys/${encodeURIComponent(apiKey.id)}`)}
      onDone={(done) => onDone(done ? `Key “${apiKey.name}” revoked.` : null)}>
      <p>Programs using the key ending in <code>{apiKey.last4}</code> are refused from their next request on. This cannot be undone.</p>
    </ConfirmDialog>
  );
}
