/**
 * The Webhooks page (owners and admins): the organization's endpoints (API.md "Webhooks"), creating one
 * (its signing secret shown once), and for the endpoint chosen in the address (`?endpoint=whe_...`) its
 * actions (send a test event, disable or enable, rotate the secret, delete) and its delivery history,
 * where a delivery opens to show every attempt and can be sent again.
 */
import '../shared.js';
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  ApiError, type IssuedWebhookEndpoint, type Organization, type Page, type WebhookDelivery, type WebhookDeliveryDetail,
  type WebhookEndpoint, type WebhookEventInfo,
} from '../api.js';
import { linkTo, navigate, pathOf, useLocation } from '../router.js';
import type { Session } from '../session.js';
import { ConfirmDialog, ErrorAlert, Field, formatDate, ListFooter, messageOf, Modal, pageQuery, PageTitle, SecretView, StatusMessage, usePagedList } from '../ui.js';

type Dialog =
  | { kind: 'create' }
  | { kind: 'rotate'; endpoint: WebhookEndpoint }
  | { kind: 'delete'; endpoint: WebhookEndpoint }
  | null;

type Tone = 'active' | 'warning' | 'danger' | 'muted';

/** Why an endpoint is off, in words (API.md "Webhooks": 410 Gone, failing for days, or by hand). */
const DISABLED_REASONS: Record<string, string> = {
  gone: 'The receiver answered 410 Gone',
  failing: 'Deliveries kept failing',
  manual: 'Turned off by hand',
};

/** The badge and the line under it for an endpoint's status. */
function endpointStatus(e: WebhookEndpoint): { label: string; tone: Tone; detail: string | null } {
  if (e.status === 'disabled') {
    return { label: 'Disabled', tone: e.disabled_reason === 'manual' ? 'muted' : 'danger', detail: e.disabled_reason === null ? null : DISABLED_REASONS[e.disabled_reason] ?? null };
  }
  if (e.failing_since !== null) return { label: 'Failing', tone: 'warning', detail: `since ${formatDate(e.failing_since)}` };
  return { label: 'Enabled', tone: 'active', detail: null };
}

const DELIVERY_STATUS: Record<WebhookDelivery['status'], { label: string; tone: Tone }> = {
  pending: { label: 'Pending', tone: 'warning' },
  succeeded: { label: 'Succeeded', tone: 'active' },
  failed: { label: 'Failed', tone: 'danger' },
};

/** An HTTP status of an attempt in words: 0 means that no response came. */
const statusText = (status: number) => (status === 0 ? 'No response' : `HTTP ${status}`);

/** The events of an endpoint: "All events" for `*`, else the names. */
function EventNames({ events }: { events: string[] }) {
  if (events.includes('*')) return <span>All events</span>;
  return <span class="event-names">{events.map((name) => <code key={name}>{name}</code>)}</span>;
}

const endpointId = (e: WebhookEndpoint) => e.id;

/** The Webhooks page; see the module comment. */
export function WebhooksPage({ session, org }: { session: Session; org: Organization }) {
  const list = usePagedList<WebhookEndpoint>((after) => session.request<Page<WebhookEndpoint>>('GET', `/v1/webhooks${pageQuery(after)}`), endpointId, org.id);
  const { search } = useLocation();
  const selectedId = new URLSearchParams(search).get('endpoint');
  const [dialog, setDialog] = useState<Dialog>(null);
  const [issued, setIssued] = useState<{ endpoint: IssuedWebhookEndpoint; rotated: boolean } | null>(null);
  const [flash, setFlash] = useState('');
  // Bumped after every change to an endpoint, so that the open endpoint is read again with the list.
  const [version, setVersion] = useState(0);

  /** Reads the endpoints (the list and the open one) again. */
  function refresh() {
    setVersion((v) => v + 1);
    list.reload();
  }

  function changed(message: string) {
    setFlash(message);
    refresh();
  }

  /** The secret was shown and the person is done with it: say what happened, and read the endpoint again. */
  function issuedSeen() {
    if (issued === null) return;
    const message = issued.rotated ? `New secret for ${issued.endpoint.url} issued.` : `Endpoint ${issued.endpoint.url} added.`;
    setIssued(null);
    changed(message);
  }

  function closeDialog(message: string | null) {
    setDialog(null);
    if (message !== null) changed(message);
  }

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Webhooks</PageTitle>
          <p class="muted">Parley sends a signed HTTP POST to each endpoint when one of the events it subscribes to happens in {org.name}.</p>
        </div>
        <button type="button" class="btn btn-primary" onClick={() => { setFlash(''); setDialog({ kind: 'create' }); }}>Add endpoint</button>
      </div>
      <StatusMessage message={flash} />
      {list.items !== null && list.items.length === 0 && (
        <div class="empty">
          <p><strong>No webhook endpoints yet.</strong></p>
          <p class="muted">Add one to have your systems told about new messages, handoffs and documents.</p>
        </div>
      )}
      {list.items !== null && list.items.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="visually-hidden">Webhook endpoints of {org.name}</caption>
            <thead>
              <tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
            </thead>
            <tbody>
              {list.items.map((endpoint) => {
                const status = endpointStatus(endpoint);
                const open = endpoint.id === selectedId;
                return (
                  <tr key={endpoint.id} class={open ? 'row-selected' : endpoint.status === 'disabled' ? 'row-muted' : undefined} data-endpoint={endpoint.id}>
                    <th scope="row" data-label="Endpoint" class="cell-url">
                      <span class="url">{endpoint.url}</span>
                      {endpoint.description !== null && endpoint.description !== '' && <span class="cell-detail">{endpoint.description}</span>}
                    </th>
                    <td data-label="Events"><EventNames events={endpoint.events} /></td>
                    <td data-label="Status">
                      <div>
                        <span class={`badge badge-${status.tone}`}>{status.label}</span>
                        {status.detail !== null && <span class="cell-detail">{status.detail}</span>}
                      </div>
                    </td>
                    <td class="cell-actions">
                      <div class="actions">
                        <a class="btn btn-sm" href={pathOf('webhooks', `?endpoint=${endpoint.id}`)} onClick={linkTo('webhooks', `?endpoint=${endpoint.id}`)}
                          aria-current={open ? 'true' : undefined} aria-label={`Deliveries of ${endpoint.url}`}>Deliveries</a>
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="endpoints" />
      {selectedId !== null && (
        <EndpointPanel key={selectedId} session={session} id={selectedId} version={version}
          onDialog={(d) => { setFlash(''); setDialog(d); }} onChanged={changed} onDeliveries={refresh} />
      )}
      {dialog?.kind === 'create' && (
        <CreateDialog session={session} onDone={(created) => {
          setDialog(null);
          if (created !== null) {
            list.reload();
            setIssued({ endpoint: created, rotated: false });
            navigate('webhooks', false, `?endpoint=${created.id}`);
          }
        }} />
      )}
      {dialog?.kind === 'rotate' && (
        <RotateDialog session={session} endpoint={dialog.endpoint} onDone={(rotated) => {
          setDialog(null);
          if (rotated !== null) setIssued({ endpoint: rotated, rotated: true });
        }} />
      )}
      {dialog?.kind === 'delete' && (
        <DeleteDialog session={session} endpoint={dialog.endpoint} onDone={(message) => {
          if (message !== null) navigate('webhooks', true);
          closeDialog(message);
        }} />
      )}
      {issued !== null && (
        <Modal title={issued.rotated ? 'The new signing secret' : 'Your endpoint’s signing secret'} onClose={issuedSeen}>
          <SecretView secret={issued.endpoint.secret} label={`Signing secret of ${issued.endpoint.url}`}
            warning="Copy the secret now: you will not see it again."
            detail={issued.rotated
              ? 'Deliveries are signed with it from now on. Put it into your receiver; during the overlap you chose, the previous secret signs too.'
              : 'Your receiver uses it to check that a delivery comes from Parley (the X-Service-Signature header). Keep it on your server.'}
            onDone={issuedSeen} />
        </Modal>
      )}
    </>
  );
}

/**
 * The open endpoint: what it is, its actions and its delivery history. Reads the endpoint again whenever
 * `version` changes (after an action on it). `onDeliveries` is called when a delivery's state changed
 * (a success ends a failing streak, failures start one), so that the endpoints are read again.
 */
function EndpointPanel({ session, id, version, onDialog, onChanged, onDeliveries }: {
  session: Session; id: string; version: number; onDialog: (d: Dialog) => void; onChanged: (message: string) => void; onDeliveries: () => void;
}) {
  const [endpoint, setEndpoint] = useState<WebhookEndpoint | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<'test' | 'toggle' | null>(null);
  // Bumped to make the delivery history read its first page again and follow pending deliveries.
  const [nudge, setNudge] = useState(0);

  useEffect(() => {
    let live = true;
    session.request<WebhookEndpoint>('GET', `/v1/webhooks/${encodeURIComponent(id)}`)
      .then((e) => { if (live) { setEndpoint(e); setError(null); } })
      .catch((err: unknown) => { if (live) setError(err instanceof ApiError && err.status === 404 ? 'This endpoint does not exist (any more).' : messageOf(err)); });
    return () => { live = false; };
  }, [session, id, version]);

  if (endpoint === null) {
    return (
      <section class="card endpoint" aria-label="Endpoint">
        {error === null
          ? <p class="muted" aria-busy="true">Loading the endpoint…</p>
          : (
            <>
              <ErrorAlert message={error} />
              <a href={pathOf('webhooks')} onClick={linkTo('webhooks')}>Back to all endpoints</a>
            </>
          )}
      </section>
    );
  }

  async function act(kind: 'test' | 'toggle') {
    if (endpoint === null || busy !== null || (kind === 'test' && endpoint.status === 'disabled')) return;
    onDialog(null); // clears the last confirmation, which would otherwise stand beside this action's
    setBusy(kind);
    setError(null);
    try {
      if (kind === 'test') {
        const queued = await session.request<{ delivery_id: string }>('POST', `/v1/webhooks/${encodeURIComponent(endpoint.id)}/test`);
        setNudge((n) => n + 1);
        onChanged(`Test event sent (delivery ${queued.delivery_id}).`);
      } else {
        const enable = endpoint.status === 'disabled';
        await session.request<WebhookEndpoint>('PATCH', `/v1/webhooks/${encodeURIComponent(endpoint.id)}`, { enabled: enable });
        if (enable) setNudge((n) => n + 1);
        onChanged(enable ? `Endpoint ${endpoint.url} enabled.` : `Endpoint ${endpoint.url} disabled: it gets no new events.`);
      }
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(null);
    }
  }

  const status = endpointStatus(endpoint);
  const overlapEnds = endpoint.previous_secret_expires_at !== null && Date.parse(endpoint.previous_secret_expires_at) > Date.now()
    ? endpoint.previous_secret_expires_at : null;
  return (
    <section class="card endpoint" aria-labelledby="endpoint-title">
      <div class="endpoint-head">
        <div class="endpoint-what">
          <h2 id="endpoint-title" class="url">{endpoint.url}</h2>
          <p class="endpoint-meta">
            <span class={`badge badge-${status.tone}`}>{status.label}</span>
            {status.detail !== null && <span class="muted">{status.detail}</span>}
            {endpoint.status === 'disabled' && endpoint.failing_since !== null && <span class="muted">failing since {formatDate(endpoint.failing_since)}</span>}
            <code class="endpoint-id">{endpoint.id}</code>
          </p>
          <p class="endpoint-events">
            {endpoint.description !== null && endpoint.description !== '' && <span class="endpoint-description">{endpoint.description}</span>}
            <span class="muted">Events:</span> <EventNames events={endpoint.events} />
          </p>
          {overlapEnds !== null && <p class="hint">The previous secret signs too until {formatDate(overlapEnds)}.</p>}
        </div>
        <a href={pathOf('webhooks')} class="btn btn-sm btn-quiet" onClick={linkTo('webhooks')} aria-label="Close the endpoint">Close</a>
      </div>
      <div class="endpoint-actions">
        {/* Busy buttons are aria-disabled, not disabled: a disabled button loses the focus to the page body. */}
        <button type="button" class="btn btn-sm" onClick={() => { void act('test'); }} aria-disabled={busy !== null || endpoint.status === 'disabled'}
          title={endpoint.status === 'disabled' ? 'Enable the endpoint to send it events' : undefined}>{busy === 'test' ? 'Sending…' : 'Send test event'}</button>
        <button type="button" class="btn btn-sm" onClick={() => { void act('toggle'); }} aria-disabled={busy !== null}>
          {endpoint.status === 'disabled' ? (busy === 'toggle' ? 'Enabling…' : 'Enable') : (busy === 'toggle' ? 'Disabling…' : 'Disable')}
        </button>
        <button type="button" class="btn btn-sm" onClick={() => { if (busy === null) onDialog({ kind: 'rotate', endpoint }); }} aria-disabled={busy !== null}>Rotate secret</button>
        <button type="button" class="btn btn-sm btn-danger-quiet" onClick={() => { if (busy === null) onDialog({ kind: 'delete', endpoint }); }} aria-disabled={busy !== null}>Delete</button>
      </div>
      <ErrorAlert message={error} />
      <DeliveryHistory session={session} endpoint={endpoint} nudge={nudge} onChanged={onDeliveries} />
    </section>
  );
}

const deliveryId = (d: WebhookDelivery) => d.id;

/** How long the history follows pending deliveries after an action, ms, and how often it reads them. */
const FOLLOW_MS = 30_000;
const FOLLOW_EVERY_MS = 1_000;

/**
 * The endpoint's deliveries, newest first. After an action (`nudge` changes: a test sent, a retry, the
 * endpoint enabled) it reads the first page again every second for up to 30 s while one is pending, so
 * its attempts show up without a reload; the Refresh button reads it on demand. `onChanged` is called
 * when a delivery seen before changed (its status or attempts) or a new one appeared.
 */
function DeliveryHistory({ session, endpoint, nudge, onChanged }: { session: Session; endpoint: WebhookEndpoint; nudge: number; onChanged: () => void }) {
  const base = `/v1/webhooks/${encodeURIComponent(endpoint.id)}`;
  const list = usePagedList<WebhookDelivery>((after) => session.request<Page<WebhookDelivery>>('GET', `${base}/deliveries${pageQuery(after, 20)}`), deliveryId, endpoint.id);
  const [openId, setOpenId] = useState<string | null>(null);
  const followUntil = useRef(0);
  const reload = useRef(list.reload);
  reload.current = list.reload;

  function follow() {
    followUntil.current = Date.now() + FOLLOW_MS;
    reload.current();
  }

  const first = useRef(true);
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    follow();
  }, [nudge]);

  useEffect(() => {
    if (list.items === null || list.loading || Date.now() > followUntil.current) return;
    if (!list.items.some((d) => d.status === 'pending')) return;
    const t = setTimeout(() => reload.current(), FOLLOW_EVERY_MS);
    return () => clearTimeout(t);
  }, [list.items, list.loading]);

  const states = list.items?.map((d) => `${d.id}:${d.status}:${d.attempt_count}`).join(',') ?? null;
  const seen = useRef<string | null>(null);
  const changed = useRef(onChanged);
  changed.current = onChanged;
  useEffect(() => {
    if (states === null) return;
    if (seen.current !== null && seen.current !== states) changed.current();
    seen.current = states;
  }, [states]);

  return (
    <div class="deliveries">
      <div class="deliveries-head">
        <h3>Deliveries</h3>
        <button type="button" class="btn btn-sm btn-quiet" onClick={() => { if (!list.loading) reload.current(); }} aria-disabled={list.loading}>Refresh</button>
      </div>
      {list.items !== null && list.items.length === 0 && (
        <p class="muted deliveries-empty">No deliveries yet. Send a test event to try the endpoint.</p>
      )}
      {list.items !== null && list.items.length > 0 && (
        <div class="table-wrap">
          <table class="table table-deliveries">
            <caption class="visually-hidden">Deliveries to {endpoint.url}</caption>
            <thead>
              <tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last response</th><th scope="col"><span class="visually-hidden">Details</span></th></tr>
            </thead>
            <tbody>
              {list.items.map((d) => {
                const status = DELIVERY_STATUS[d.status];
                const open = d.id === openId;
                return (
                  <Fragment key={d.id}>
                    <tr data-delivery={d.id} class={open ? 'row-open' : undefined}>
                      <th scope="row" data-label="Event">
                        <code>{d.event_type}</code>
                        <span class="cell-detail">{formatDate(d.created_at)}</span>
                      </th>
                      <td data-label="Status">
                        <div>
                          <span class={`badge badge-${status.tone}`}>{status.label}</span>
                          {d.status === 'pending' && d.next_attempt_at !== null && <span class="cell-detail">next try {formatDate(d.next_attempt_at)}</span>}
                        </div>
                      </td>
                      <td data-label="Attempts">{d.attempt_count}</td>
                      <td data-label="Last response" class="cell-response">
                        {d.last_response === null
                          ? <span class="muted">{d.attempt_count === 0 ? 'Not sent yet' : 'None'}</span>
                          : (
                            <div>
                              <span>{statusText(d.last_response.status)} · {d.last_response.duration_ms} ms</span>
                              {d.last_error !== null && <span class="cell-detail">{d.last_error}</span>}
                            </div>
                          )}
                      </td>
                      <td class="cell-actions">
                        <div class="actions">
                          <button type="button" class="btn btn-sm" aria-expanded={open} aria-controls={`attempts-${d.id}`}
                            aria-label={`Attempts of ${d.event_type} delivery ${d.id}`} onClick={() => setOpenId(open ? null : d.id)}>
                            {open ? 'Hide' : 'Attempts'}
                          </button>
                        </div>
                      </td>
                    </tr>
                    {open && (
                      <tr class="row-attempts">
                        <td colSpan={5} id={`attempts-${d.id}`}>
                          <DeliveryAttempts session={session} base={base} delivery={d} onRetried={follow} />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <ListFooter list={list} noun="deliveries" />
    </div>
  );
}

/**
 * One delivery's attempts, newest first (status, 0 shown as "No response"; duration; error; the first
 * 4 KiB of the body, as text) and its Retry button. Reads them again when the delivery's summary changes.
 */
function DeliveryAttempts({ session, base, delivery, onRetried }: {
  session: Session; base: string; delivery: WebhookDelivery; onRetried: () => void;
}) {
  const [detail, setDetail] = useState<WebhookDeliveryDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [retryError, setRetryError] = useState<string | null>(null);
  const [retried, setRetried] = useState('');
  const [busy, setBusy] = useState(false);
  const path = `${base}/deliveries/${encodeURIComponent(delivery.id)}`;

  useEffect(() => {
    let live = true;
    session.request<WebhookDeliveryDetail>('GET', path)
      .then((d) => { if (live) { setDetail(d); setError(null); } })
      .catch((err: unknown) => { if (live) setError(messageOf(err)); });
    return () => { live = false; };
  }, [session, path, delivery.attempt_count, delivery.status]);

  async function retry() {
    if (busy) return;
    setBusy(true);
    setRetryError(null);
    setRetried('');
    try {
      await session.request<WebhookDelivery>('POST', `${path}/retry`);
      setRetried('Sent again.');
      onRetried();
    } catch (err) {
      setRetryError(err instanceof ApiError && err.code === 'delivery_in_progress'
        ? 'An attempt of this delivery is running right now. Wait until it is recorded, then retry.'
        : messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="attempts">
      <div class="attempts-head">
        <p class="muted">Event <code>{delivery.event_id}</code> · delivery <code>{delivery.id}</code></p>
        <div class="attempts-retry">
          <StatusMessage message={retried} />
          <button type="button" class="btn btn-sm" onClick={() => { void retry(); }} aria-disabled={busy}>{busy ? 'Retrying…' : 'Retry'}</button>
        </div>
      </div>
      <ErrorAlert message={retryError} />
      <ErrorAlert message={error} />
      {detail === null && error === null && <p class="muted" aria-busy="true">Loading attempts…</p>}
      {detail !== null && detail.attempts.length === 0 && <p class="muted">No attempt yet.</p>}
      {detail !== null && detail.attempts.length > 0 && (
        <ol class="attempt-list" reversed>
          {[...detail.attempts].reverse().map((a) => (
            <li key={a.number} class="attempt" data-attempt={a.number}>
              <p class="attempt-line">
                <strong>Attempt {a.number}</strong>
                <span class={`badge badge-${a.status >= 200 && a.status < 300 ? 'active' : 'danger'}`} data-status={a.status}>{statusText(a.status)}</span>
                <span class="muted">{a.duration_ms} ms · {formatDate(a.at)}</span>
              </p>
              {a.error !== null && a.error !== `HTTP ${a.status}` && <p class="attempt-error">{a.error}</p>}
              {a.body !== '' ? <pre class="attempt-body">{a.body}</pre> : <p class="hint">Empty body.</p>}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

/** Creates an endpoint: URL, optional description, and the events (all, or some) it subscribes to. */
function CreateDialog({ session, onDone }: { session: Session; onDone: (created: IssuedWebhookEndpoint | null) => void }) {
  const [events, setEvents] = useState<WebhookEventInfo[] | null>(null);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [all, setAll] = useState(false);
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    session.request<{ data: WebhookEventInfo[] }>('GET', '/v1/webhooks/events')
      .then((r) => setEvents(r.data))
      .catch((err: unknown) => setError(messageOf(err)));
  }, [session]);

  function toggle(name: string, on: boolean) {
    const next = new Set(chosen);
    if (on) next.add(name); else next.delete(name);
    setChosen(next);
  }

  async function submit(e: Event) {
    e.preventDefault();
    if (!all && chosen.size === 0) {
      setError('Choose at least one event, or all events.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const body: { url: string; events: string[]; description?: string } = {
        url: url.trim(),
        events: all ? ['*'] : (events ?? []).map((ev) => ev.name).filter((name) => chosen.has(name)),
      };
      if (description.trim() !== '') body.description = description.trim();
      onDone(await session.request<IssuedWebhookEndpoint>('POST', '/v1/webhooks', body));
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }

  return (
    <Modal title="Add a webhook endpoint" onClose={() => onDone(null)}>
      <form onSubmit={submit} class="stack">
        <ErrorAlert message={error} />
        <Field id="webhook-url" label="URL" hint="Where Parley sends the POST requests, e.g. https://hooks.example.com/parley.">
          <input id="webhook-url" type="url" required maxLength={2048} value={url} aria-describedby="webhook-url-hint" placeholder="https://"
            onInput={(e) => setUrl(e.currentTarget.value)} />
        </Field>
        <Field id="webhook-description" label="Description (optional)">
          <input id="webhook-description" type="text" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <fieldset class="events-picker">
          <legend>Events</legend>
          <label class="check check-all">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} />
            <span><strong>All events</strong><span class="hint">Also events added to Parley later.</span></span>
          </label>
          {events === null && error === null && <p class="muted" aria-busy="true">Loading events…</p>}
          {events !== null && events.map((ev) => (
            <label class="check" key={ev.name}>
              <input type="checkbox" name="events" value={ev.name} disabled={all} checked={all || chosen.has(ev.name)}
                onChange={(e) => toggle(ev.name, e.currentTarget.checked)} />
              <span><code>{ev.name}</code><span class="hint">{ev.description}</span></span>
            </label>
          ))}
        </fieldset>
        <div class="modal-actions">
          <button type="button" class="btn" onClick={() => onDone(null)}>Cancel</button>
          <button type="submit" class="btn btn-primary" disabled={busy || events === null}>{busy ? 'Adding…' : 'Add endpoint'}</button>
        </div>
      </form>
    </Modal>
  );
}

/** How long the previous secret keeps signing after a rotation, s (API: 0 to 7 days, default 24 h). */
const OVERLAPS: ReadonlyArray<[number, string]> = [
  [0, 'No: it stops at once'],
  [3600, 'For 1 hour'],
  [86_400, 'For 24 hours'],
  [7 * 86_400, 'For 7 days'],
];

/** Rotates an endpoint's signing secret with a chosen overlap; `onDone` gets the endpoint with its new secret. */
function RotateDialog({ session, endpoint, onDone }: { session: Session; endpoint: WebhookEndpoint; onDone: (rotated: IssuedWebhookEndpoint | null) => void }) {
  const [overlap, setOverlap] = useState(86_400);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onDone(await session.request<IssuedWebhookEndpoint>('POST', `/v1/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`, { overlap_seconds: overlap }));
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }

  return (
    <Modal title="Rotate the signing secret" onClose={() => onDone(null)}>
      <form onSubmit={submit} class="stack">
        <ErrorAlert message={error} />
        <p>A new secret signs the deliveries to <code>{endpoint.url}</code> from now on.</p>
        <Field id="overlap" label="Keep signing with the old secret too?" hint="Time to put the new secret into your receiver (in the webhook-signature header).">
          <select id="overlap" value={String(overlap)} aria-describedby="overlap-hint" onChange={(e) => setOverlap(Number(e.currentTarget.value))}>
            {OVERLAPS.map(([seconds, label]) => <option key={seconds} value={String(seconds)}>{label}</option>)}
          </select>
        </Field>
        <div class="modal-actions">
          <button type="button" class="btn" onClick={() => onDone(null)}>Cancel</button>
          <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Rotating…' : 'Rotate secret'}</button>
        </div>
      </form>
    </Modal>
  );
}

/** Confirms and deletes an endpoint with its delivery history. */
function DeleteDialog({ session, endpoint, onDone }: { session: Session; endpoint: WebhookEndpoint; onDone: (message: string | null) => void }) {
  return (
    <ConfirmDialog title="Delete this endpoint?" confirmLabel="Delete endpoint" busyLabel="Deleting…"
      action={() => session.request<void>('DELETE', `/v1/webhooks/${encodeURIComponent(endpoint.id)}`)}
      onDone={(done) => onDone(done ? `Endpoint ${endpoint.url} deleted.` : null)}>
      <p><code>{endpoint.url}</code> gets no more events, and its delivery history is deleted with it. This cannot be undone.</p>
    </ConfirmDialog>
  );
}
