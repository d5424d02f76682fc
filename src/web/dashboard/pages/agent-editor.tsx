import '../shared.js';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Agent, type Organization, type Schemas } from '../api.js';
import { unwrap } from '../client.js';
import { linkTo, navigate } from '../router.js';
import type { Session } from '../session.js';
import { ConfirmDialog, ErrorAlert, Field, messageOf, PageTitle, StatusMessage } from '../ui.js';
import { bodyOf, BUILTIN_TOOLS, draftOf, EMPTY_SCHEMA, fieldMessage, INSTRUCTIONS_MAX, METHODS, newToolKey, schemaProblem, type Draft, type HttpTool, type ToolDraft } from '../agent-form.js';
import { Playground } from './playground.js';

type KnowledgeBase = Schemas['KnowledgeBase'];
type Provider = Schemas['ModelProviderList']['data'][number];

/**
 * A labelled text box (or multi-line `area`) with an optional hint and the server's message for it, both
 * tied to it with aria-describedby; `aria-invalid` while there is a message.
 */
function TextField({ id, label, value, set, error, hint, area, code, ...attrs }: {
  id: string; label: string; value: string; set: (v: string) => void; error?: string | null | undefined; hint?: string; area?: number;
  code?: boolean; placeholder?: string; maxLength?: number; type?: string;
}) {
  const described = [hint === undefined ? '' : `${id}-hint`, error ? `${id}-error` : ''].filter((x) => x !== '').join(' ');
  const common = {
    id, value, 'aria-invalid': error ? 'true' as const : undefined, 'aria-describedby': described === '' ? undefined : described,
    onInput: (e: Event) => set((e.currentTarget as HTMLInputElement).value), ...attrs,
  };
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {area === undefined ? <input {...common} autocomplete="off" /> : <textarea {...common} rows={area} class={code ? 'textarea code' : 'textarea'} spellcheck={!code} />}
      {hint !== undefined && <p id={`${id}-hint`} class="hint">{hint}</p>}
      {error ? <p id={`${id}-error`} class="field-error">{error}</p> : null}
    </div>
  );
}

/** A checkbox with its label and a hint under it. */
function Check({ label, hint, checked, set }: { label: string; hint?: string; checked: boolean; set: (on: boolean) => void }) {
  return (
    <label class="check">
      <input type="checkbox" checked={checked} onChange={(e) => set(e.currentTarget.checked)} />
      <span>{label}{hint !== undefined && <span class="hint">{hint}</span>}</span>
    </label>
  );
}

/** `list` with `item` in it when `on`, without it otherwise. */
const toggle = (list: string[], item: string, on: boolean) => (on ? [...list, item] : list.filter((x) => x !== item));

/**
 * An agent's editor (issue 40): name, description, instructions with a character count, the model among
 * the configured providers, a checkbox per knowledge base, the built-in and HTTP tools (the arguments'
 * JSON Schema checked as it is typed), the safety settings and the allowed origins; Save creates or
 * updates, Delete asks first. Owners and admins only (the shell sends operators to the inbox). A field the server refuses shows its `validation_failed` message beside it.
 * A saved agent has the playground beside the form.
 */
export function AgentEditorPage({ session, agentId }: { session: Session; org: Organization; agentId: string | null }) {
  const [agent, setAgent] = useState<Agent | null>(null);
  const [draft, setDraft] = useState<Draft | null>(agentId === null ? draftOf(null) : null);
  const [bases, setBases] = useState<KnowledgeBase[] | null>(null);
  const [providers, setProviders] = useState<Provider[]>([{ id: 'builtin', default_model: 'builtin' }]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [flash, setFlash] = useState('');
  const [deleting, setDeleting] = useState(false);

  useEffect(() => {
    let live = true;
    (async () => {
      try {
        const [kbs, prov, a] = await Promise.all([
          unwrap(session.api.GET('/v1/knowledge-bases', { params: { query: { limit: 100 } } })),
          unwrap(session.api.GET('/v1/model-providers')),
          agentId === null ? Promise.resolve(null) : unwrap(session.api.GET('/v1/agents/{agent_id}', { params: { path: { agent_id: agentId } } })),
        ]);
        if (!live) return;
        setBases(kbs.data);
        setProviders(prov.data);
        if (a !== null) { setAgent(a); setDraft(draftOf(a)); }
      } catch (err) {
        if (live) setLoadError(messageOf(err));
      }
    })();
    return () => { live = false; };
  }, [session, agentId]);

  if (draft === null) {
    return (
      <>
        <PageTitle>Agent</PageTitle>
        <ErrorAlert message={loadError} />
        {loadError === null && <p class="muted" aria-busy="true">Loading the agent…</p>}
      </>
    );
  }

  const set = (change: Partial<Draft>) => setDraft({ ...draft, ...change });
  const setTool = (key: number, change: Partial<ToolDraft>) => set({ httpTools: draft.httpTools.map((t) => (t.key === key ? { ...t, ...change } : t)) });
  const fields = error?.fields ?? [];
  const problem = (path: string) => fieldMessage(fields, path);
  const schemaProblems = draft.httpTools.map((t) => schemaProblem(t.parameters));

  async function save(e: Event) {
    e.preventDefault();
    if (draft === null) return;
    setError(null);
    setFlash('');
    if (schemaProblems.some((p) => p !== null)) {
      setError(new ApiError(0, 'invalid_schema', 'A tool\'s arguments schema is not valid JSON Schema: see the tools below.'));
      return;
    }
    setSaving(true);
    try {
      const body = bodyOf(draft);
      const saved = agent === null
        ? await unwrap(session.api.POST('/v1/agents', { body }))
        : await unwrap(session.api.PATCH('/v1/agents/{agent_id}', { params: { path: { agent_id: agent.id } }, body }));
      setAgent(saved);
      setFlash(agent === null ? `“${saved.name}” is created. Try it in the playground.` : `“${saved.name}” is saved.`);
      if (agent === null) navigate('agent', true, saved.id);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unknown', messageOf(err)));
    } finally {
      setSaving(false);
    }
  }

  const title = agent === null ? 'New agent' : agent.name;
  const count = draft.instructions.length;

  return (
    <>
      <div class="page-head">
        <div>
          <p class="crumbs"><a href="/dashboard/agents" onClick={linkTo('agents')}>Agents</a></p>
          <PageTitle>{title}</PageTitle>
          {agent !== null && <p class="muted small"><code>{agent.id}</code></p>}
        </div>
      </div>
      <div class={agent === null ? 'editor' : 'editor editor-with-playground'}>
        <form class="editor-form stack" onSubmit={save} noValidate aria-labelledby="page-title">
          <ErrorAlert message={error?.message ?? null} />
          <StatusMessage message={flash} />

          <section class="card stack" aria-labelledby="ed-about">
            <h2 id="ed-about" class="card-title">About</h2>
            <TextField id="agent-name" label="Name" value={draft.name} set={(name) => set({ name })} error={problem('name')} maxLength={200} />
            <TextField id="agent-description" label="Description" value={draft.description} set={(description) => set({ description })} error={problem('description')}
              hint="What the agent is for; shown to your team, not to visitors." />
            <TextField id="agent-instructions" label="Instructions" value={draft.instructions} set={(instructions) => set({ instructions })} area={8}
              error={problem('instructions') ?? (count > INSTRUCTIONS_MAX ? `At most ${INSTRUCTIONS_MAX.toLocaleString()} characters.` : undefined)}
              hint={`${count.toLocaleString()} / ${INSTRUCTIONS_MAX.toLocaleString()} characters`} />
          </section>

          <section class="card stack" aria-labelledby="ed-model">
            <h2 id="ed-model" class="card-title">Model</h2>
            <div class="form-row">
              <Field id="agent-provider" label="Provider">
                <select id="agent-provider" value={draft.provider}
                  onChange={(e) => {
                    const provider = e.currentTarget.value;
                    set({ provider, model: providers.find((p) => p.id === provider)?.default_model ?? '' });
                  }}>
                  {providers.map((p) => <option key={p.id} value={p.id}>{p.id}</option>)}
                  {!providers.some((p) => p.id === draft.provider) && <option value={draft.provider}>{draft.provider} (not configured)</option>}
                </select>
              </Field>
              <TextField id="agent-model" label="Model name" value={draft.model} set={(model) => set({ model })} error={problem('model')} />
            </div>
            <p class="hint">Providers are configured on the server (<code>PARLEY_OPENAI_BASE_URL</code> adds <code>openai</code>).</p>
          </section>

          <fieldset class="card stack">
            <legend class="card-title">Knowledge bases</legend>
            {bases?.length === 0 && <p class="muted">No knowledge bases yet: create one on the Knowledge page.</p>}
            {bases?.map((kb) => (
              <Check key={kb.id} label={kb.name} hint={`${kb.document_count} documents · ${kb.chunk_count} passages`}
                checked={draft.knowledgeBaseIds.includes(kb.id)} set={(on) => set({ knowledgeBaseIds: toggle(draft.knowledgeBaseIds, kb.id, on) })} />
            ))}
            {problem('knowledge_base_ids') && <p class="field-error">{problem('knowledge_base_ids')}</p>}
          </fieldset>

          <fieldset class="card stack">
            <legend class="card-title">Tools</legend>
            {BUILTIN_TOOLS.map((t) => (
              <Check key={t.name} label={t.label} hint={t.hint} checked={draft.builtinTools.includes(t.name)}
                set={(on) => set({ builtinTools: toggle(draft.builtinTools, t.name, on) })} />
            ))}
            {draft.httpTools.map((t, i) => {
              const at = (field: string) => problem(`tools.${draft.builtinTools.length + i}.${field}`);
              const p = `tool-${t.key}`;
              const schemaState = schemaProblems[i] ?? at('parameters');
              return (
                <fieldset key={t.key} class="tool-box stack">
                  <legend>HTTP tool {i + 1}</legend>
                  <div class="form-row">
                    <TextField id={`${p}-name`} label="Tool name" value={t.name} set={(name) => setTool(t.key, { name })} error={at('name')} placeholder="lookup_order" />
                    <Field id={`${p}-method`} label="Method">
                      <select id={`${p}-method`} value={t.method} onChange={(e) => setTool(t.key, { method: e.currentTarget.value as HttpTool['method'] })}>
                        {METHODS.map((m) => <option key={m} value={m}>{m}</option>)}
                      </select>
                    </Field>
                  </div>
                  <TextField id={`${p}-description`} label="Tool description" value={t.description} set={(description) => setTool(t.key, { description })} error={at('description')} />
                  <TextField id={`${p}-url`} label="URL" type="url" value={t.url} set={(url) => setTool(t.key, { url })} error={at('url')} placeholder="https://shop.example/api/orders" />
                  <TextField id={`${p}-schema`} label="Arguments (JSON Schema)" value={t.parameters} set={(parameters) => setTool(t.key, { parameters })} area={6} code
                    error={schemaState} hint={schemaState ? undefined : 'Valid JSON Schema of an object.'} />
                  <div>
                    <button type="button" class="btn btn-sm btn-danger-quiet" aria-label={`Remove HTTP tool ${i + 1}`}
                      onClick={() => set({ httpTools: draft.httpTools.filter((x) => x.key !== t.key) })}>Remove tool</button>
                  </div>
                </fieldset>
              );
            })}
            <div>
              <button type="button" class="btn btn-sm" onClick={() => set({
                httpTools: [...draft.httpTools, { key: newToolKey(), name: '', description: '', url: '', method: 'GET', parameters: EMPTY_SCHEMA, headers_from_env: undefined, timeout_ms: 10_000 }],
              })}>Add HTTP tool</button>
            </div>
            {fields.some((f) => f.path === 'tools') && <p class="field-error">{problem('tools')}</p>}
          </fieldset>

          <fieldset class="card stack">
            <legend class="card-title">Safety</legend>
            <Check label="Redact personal data" hint="E-mail addresses, card numbers and secrets in replies are replaced." checked={draft.redactPii} set={(redactPii) => set({ redactPii })} />
            <TextField id="agent-blocked" label="Blocked phrases" value={draft.blockedPhrases} set={(blockedPhrases) => set({ blockedPhrases })} area={3}
              error={problem('safety.blocked_phrases')} hint="One per line. A reply that contains one is replaced by the message below." />
            <TextField id="agent-blocked-message" label="Message instead of a blocked reply" value={draft.blockedMessage} set={(blockedMessage) => set({ blockedMessage })}
              error={problem('safety.blocked_message')} />
          </fieldset>

          <section class="card stack" aria-labelledby="ed-origins">
            <h2 id="ed-origins" class="card-title">Websites</h2>
            <TextField id="agent-origins" label="Allowed origins" value={draft.allowedOrigins} set={(allowedOrigins) => set({ allowedOrigins })} area={3} code
              error={problem('allowed_origins')} hint="One per line, like https://shop.example; * lets any website embed the published agent." />
          </section>

          <div class="editor-actions">
            <button type="submit" class="btn btn-primary" disabled={saving}>{saving ? 'Saving…' : 'Save'}</button>
            {agent !== null && <button type="button" class="btn btn-danger-quiet" onClick={() => setDeleting(true)}>Delete agent</button>}
          </div>
        </form>
        {agent !== null && <Playground session={session} agent={agent} />}
      </div>
      {deleting && agent !== null && (
        <ConfirmDialog title={`Delete “${agent.name}”?`} confirmLabel="Delete" busyLabel="Deleting…"
          action={() => unwrap(session.api.DELETE('/v1/agents/{agent_id}', { params: { path: { agent_id: agent.id } } }))}
          onDone={(done) => { setDeleting(false); if (done) navigate('agents'); }}>
          <p>The agent stops answering at once{agent.published ? ', also on every website that embeds it' : ''}. Its conversations stay in the inbox. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
