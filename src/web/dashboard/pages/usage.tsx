import '../shared.js';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { AgentSummary, Organization, Schemas } from '../api.js';
import { StackedBars, type Series } from '../chart.js';
import { DAYS, lastDays, nextReset, perDay } from '../usage-days.js';
import { unwrap } from '../client.js';
import type { Session } from '../session.js';
import { ErrorAlert, formatDate, messageOf, PageTitle, StatusMessage } from '../ui.js';

type UsageDay = Schemas['UsageReport']['data'][number];
type OrgSettings = Schemas['Organization'];
type Threshold = Schemas['UsageThresholds']['thresholds'][number];

const METRIC_LABELS: Record<Threshold['metric'], string> = { total_tokens: 'Total tokens', input_tokens: 'Input tokens', output_tokens: 'Output tokens' };
const PERIOD_LABELS: Record<Threshold['period'], string> = { day: 'per day', month: 'per month' };

const shortDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const longDay = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
const dayOf = (iso: string) => new Date(`${iso}T00:00:00Z`);

/**
 * Usage (issue 40, owners and admins): the chart "Tokens per day", input and output tokens of the last 30
 * days for one agent or all, the same numbers in a table, and the organization's thresholds with when
 * each next resets. Playground turns count: they cost tokens like any other. Also the organization's
 * retention (`retention_days`: conversations idle that long are erased), beside the thresholds.
 */
export function UsagePage({ session, org }: { session: Session; org: Organization }) {
  const [rows, setRows] = useState<UsageDay[] | null>(null);
  const [agents, setAgents] = useState<AgentSummary[]>([]);
  const [agentId, setAgentId] = useState<string>('');
  const [thresholds, setThresholds] = useState<Threshold[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [flash, setFlash] = useState('');
  const [settings, setSettings] = useState<OrgSettings | null>(null);
  const [days_, setDays] = useState('');
  const now = useMemo(() => new Date(), []);
  const days = useMemo(() => lastDays(now), [now]);

  useEffect(() => {
    let live = true;
    Promise.all([
      unwrap(session.api.GET('/v1/usage', { params: { query: { from: days[0], to: days[days.length - 1] } } })),
      unwrap(session.api.GET('/v1/agents', { params: { query: { limit: 100 } } })),
      unwrap(session.api.GET('/v1/usage/thresholds')),
      unwrap(session.api.GET('/v1/organization')),
    ]).then(([usage, a, t, o]) => {
      if (!live) return;
      setRows(usage.data);
      setAgents(a.data);
      setThresholds(t.thresholds);
      setSettings(o);
      setDays(o.retention_days === null ? '' : String(o.retention_days));
    }, (err: unknown) => { if (live) setError(messageOf(err)); });
    return () => { live = false; };
  }, [session, org.id, days]);

  const totals = useMemo(() => perDay(rows ?? [], days, agentId === '' ? null : agentId), [rows, days, agentId]);
  const series = useMemo<Series[]>(() => [
    { name: 'Input tokens', className: 'series-input', values: totals.map((t) => t.input) },
    { name: 'Output tokens', className: 'series-output', values: totals.map((t) => t.output) },
  ], [totals]);
  const labels = useMemo(() => days.map((d) => shortDay.format(dayOf(d))), [days]);
  const used = totals.filter((t) => t.input + t.output + t.turns > 0);
  const sum = used.reduce((s, t) => ({ input: s.input + t.input, output: s.output + t.output, turns: s.turns + t.turns }), { input: 0, output: 0, turns: 0 });
  const agentName = agentId === '' ? 'all agents' : agents.find((a) => a.id === agentId)?.name ?? agentId;

  async function saveThresholds(e: Event) {
    e.preventDefault();
    if (thresholds === null) return;
    setSaving(true);
    setSaveError(null);
    setFlash('');
    try {
      const saved = await unwrap(session.api.PUT('/v1/usage/thresholds', { body: { thresholds } }));
      setThresholds(saved.thresholds);
      setFlash('Thresholds saved.');
    } catch (err) {
      setSaveError(messageOf(err));
    } finally {
      setSaving(false);
    }
  }
  async function saveRetention(e: Event) {
    e.preventDefault();
    setSaveError(null);
    setFlash('');
    try {
      const o = await unwrap(session.api.PATCH('/v1/organization', { body: { retention_days: days_ === '' ? null : Number(days_) } }));
      setSettings(o);
      setFlash('Retention saved.');
    } catch (err) {
      setSaveError(messageOf(err));
    }
  }
  const setAt = (i: number, change: Partial<Threshold>) => setThresholds((all) => (all ?? []).map((t, j) => (j === i ? { ...t, ...change } : t)));

  return (
    <>
      <div class="page-head">
        <div>
          <PageTitle>Usage</PageTitle>
          <p class="muted">Tokens your agents used in the last {DAYS} days (UTC days), playground included.</p>
        </div>
        <div class="field usage-agent">
          <label for="usage-agent">Agent</label>
          <select id="usage-agent" value={agentId} onChange={(e) => setAgentId(e.currentTarget.value)}>
            <option value="">All agents</option>
            {agents.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
          </select>
        </div>
      </div>
      <ErrorAlert message={error} />
      {rows === null && error === null && <p class="muted" aria-busy="true">Loading usage…</p>}
      {rows !== null && (
        <>
          <figure class="card chart-card" aria-labelledby="chart-title">
            <figcaption class="chart-head">
              <h2 id="chart-title" class="card-title">Tokens per day</h2>
              <span class="legend" aria-hidden="true">
                <span class="legend-item"><span class="swatch series-input" />Input</span>
                <span class="legend-item"><span class="swatch series-output" />Output</span>
              </span>
            </figcaption>
            <StackedBars label="Tokens per day" labels={labels} series={series} showEvery={matchMedia('(max-width: 720px)').matches ? 10 : 5} />
          </figure>
          <div class="table-wrap usage-table">
            <table class="table">
              <caption>Tokens per day, {agentName} (days without usage left out)</caption>
              <thead><tr><th scope="col">Day (UTC)</th><th scope="col">Input tokens</th><th scope="col">Output tokens</th><th scope="col">Total tokens</th><th scope="col">Turns</th></tr></thead>
              <tbody>
                {used.length === 0 && <tr><td colSpan={5} class="muted">No usage in these {DAYS} days.</td></tr>}
                {used.map((t) => (
                  <tr key={t.day}>
                    <th scope="row" data-label="Day (UTC)">{longDay.format(dayOf(t.day))}</th>
                    <td data-label="Input tokens">{t.input.toLocaleString()}</td>
                    <td data-label="Output tokens">{t.output.toLocaleString()}</td>
                    <td data-label="Total tokens">{(t.input + t.output).toLocaleString()}</td>
                    <td data-label="Turns">{t.turns.toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
              {used.length > 0 && (
                <tfoot><tr><th scope="row">Total</th><td data-label="Input tokens">{sum.input.toLocaleString()}</td><td data-label="Output tokens">{sum.output.toLocaleString()}</td><td data-label="Total tokens">{(sum.input + sum.output).toLocaleString()}</td><td data-label="Turns">{sum.turns.toLocaleString()}</td></tr></tfoot>
              )}
            </table>
          </div>
        </>
      )}
      {thresholds !== null && (
        <form class="card stack thresholds" onSubmit={saveThresholds} aria-labelledby="thresholds-title">
          <h2 id="thresholds-title" class="card-title">Thresholds</h2>
          <p class="hint">Crossing a threshold sends the <code>usage.threshold</code> webhook event, once per period.</p>
          <ErrorAlert message={saveError} />
          <StatusMessage message={flash} />
          {thresholds.length === 0 && <p class="muted">No thresholds.</p>}
          {thresholds.map((t, i) => (
            <fieldset key={i} class="threshold">
              <legend class="visually-hidden">Threshold {i + 1}</legend>
              <div class="form-row">
                <div class="field">
                  <label for={`th-${i}-value`}>Threshold {i + 1}: tokens</label>
                  <input id={`th-${i}-value`} type="number" min={1} step={1} required value={t.value} onInput={(e) => setAt(i, { value: Number(e.currentTarget.value) })} />
                </div>
                <div class="field">
                  <label for={`th-${i}-metric`}>Counted</label>
                  <select id={`th-${i}-metric`} value={t.metric} onChange={(e) => setAt(i, { metric: e.currentTarget.value as Threshold['metric'] })}>
                    {Object.entries(METRIC_LABELS).map(([v, l]) => <option key={v} value={v}>{l}</option>)}
                  </select>
                </div>
                <div class="field">
                  <label for={`th-${i}-period`}>Period</label>
                  <select id={`th-${i}-period`} value={t.period} onChange={(e) => setAt(i, { period: e.currentTarget.value as Threshold['period'] })}>
                    {Object.entries(PERIOD_LABELS).map(([v, l]) => <option key={v} value={v}>{l}</option>)}
                  </select>
                </div>
                <button type="button" class="btn btn-sm btn-danger-quiet" aria-label={`Remove threshold ${i + 1}`}
                  onClick={() => setThresholds(thresholds.filter((_, j) => j !== i))}>Remove</button>
              </div>
              <p class="hint">Next reset: <time dateTime={nextReset(t.period, now).toISOString()}>{formatDate(nextReset(t.period, now).toISOString())}</time> (start of the next UTC {t.period}).</p>
            </fieldset>
          ))}
          <div class="editor-actions">
            <button type="button" class="btn btn-sm" onClick={() => setThresholds([...thresholds, { metric: 'total_tokens', value: 1_000_000, period: 'month' }])}>Add threshold</button>
            <button type="submit" class="btn btn-primary" disabled={saving}>{saving ? 'Saving…' : 'Save thresholds'}</button>
          </div>
        </form>
      )}
      {settings !== null && (
        <form class="card stack" onSubmit={saveRetention} aria-labelledby="retention-title">
          <h2 id="retention-title" class="card-title">Retention</h2>
          <div class="field">
            <label for="retention-days">Erase conversations idle for (days)</label>
            <input id="retention-days" type="number" min={1} max={36500} step={1} value={days_} onInput={(e) => setDays(e.currentTarget.value)} />
          </div>
          <p class="hint">Empty: the server's default, {settings.default_retention_days === null ? 'keep everything' : `${settings.default_retention_days} days`}. Erased conversations are gone for good; usage totals stay.</p>
          <div class="editor-actions"><button type="submit" class="btn btn-primary">Save retention</button></div>
        </form>
      )}
    </>
  );
}
