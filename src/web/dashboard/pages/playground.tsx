import { createParser } from 'eventsource-parser';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorFromBody, type Agent, type Schemas } from '../api.js';
import { PLAYGROUND } from '../inbox.js';
import { applyEvent, newExchange, type Exchange } from '../playground-turn.js';
import type { Session } from '../session.js';
import { ErrorAlert, messageOf } from '../ui.js';

type StreamEvent = Schemas['StreamEvent'];
type Citation = Schemas['Citation'];

const ms = (n: number | null | undefined) => (n === null || n === undefined ? '—' : `${Math.round(n).toLocaleString()} ms`);
const json = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/** Where a passage comes from: title, heading path and page, as known. */
function sourceLabel(c: Citation): string {
  return [c.title, c.heading, c.page === undefined ? undefined : `page ${c.page}`].filter((p) => p !== undefined && p !== '').join(' · ');
}

function ExchangeView({ x }: { x: Exchange }) {
  return (
    <li class="pg-exchange">
      <div class="msg msg-visitor">
        <div class="msg-meta"><span class="msg-who">You</span></div>
        <div class="msg-body">{x.message}</div>
      </div>
      <div class={x.streaming ? 'msg msg-agent msg-streaming' : 'msg msg-agent'} aria-busy={x.streaming ? 'true' : undefined}>
        <div class="msg-meta"><span class="msg-who">Agent</span>{x.finish !== null && x.finish !== 'stop' && <span class="badge badge-muted">{x.finish}</span>}</div>
        {x.tools.length > 0 && (
          <ul class="pg-tools" aria-label="Tool calls">
            {x.tools.map((t) => (
              <li key={t.id} class={t.isError ? 'pg-tool tool-error' : 'pg-tool'}>
                <details>
                  <summary>{t.name} {t.output === undefined ? '(running…)' : t.isError ? '(failed)' : '(done)'}</summary>
                  <p class="small">Arguments</p>
                  <pre class="pg-json">{json(t.arguments)}</pre>
                  {t.output !== undefined && <><p class="small">Result</p><pre class="pg-json">{json(t.output)}</pre></>}
                </details>
              </li>
            ))}
          </ul>
        )}
        {(x.reply !== '' || x.streaming) && <div class="msg-body">{x.reply}{x.streaming && <span class="caret" aria-hidden="true" />}</div>}
        {x.error !== null && <p class="msg-note msg-error" role="alert">{x.error}</p>}
        {x.citations.length > 0 && (
          <ol class="msg-sources" aria-label="Sources">
            {x.citations.map((c) => (
              <li key={c.chunk_id}>
                <span class="source-title">{sourceLabel(c)}</span>
                <span class="source-snippet">{c.snippet}</span>
              </li>
            ))}
          </ol>
        )}
        {!x.streaming && x.usage !== null && (
          <dl class="pg-usage">
            <div><dt>Input</dt><dd>{x.usage.input_tokens.toLocaleString()} tokens</dd></div>
            <div><dt>Output</dt><dd>{x.usage.output_tokens.toLocaleString()} tokens</dd></div>
            {x.timing !== null
              ? <><div><dt>First token</dt><dd>{ms(x.timing.first_token_ms)}</dd></div><div><dt>Total</dt><dd>{ms(x.timing.total_ms)}</dd></div></>
              : <div><dt>First token</dt><dd>{ms(x.firstTokenMs)}</dd></div>}
          </dl>
        )}
      </div>
    </li>
  );
}

/**
 * The editor's playground (issue 40): chats with the agent as saved, over the same streamed endpoint as
 * any client (`POST /v1/agents/{agent_id}/chat`, SSE read with eventsource-parser), as the signed-in
 * person. Each reply shows its citations, tool calls and results, usage and timing. Its conversations
 * carry `metadata.source: "playground"`, so the inbox leaves them out. New conversation starts over.
 */
export function Playground({ session, agent }: { session: Session; agent: Agent }) {
  const [exchanges, setExchanges] = useState<Exchange[]>([]);
  const [conversationId, setConversationId] = useState<string | null>(null);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [announce, setAnnounce] = useState('');
  const abort = useRef<AbortController | null>(null);
  const log = useRef<HTMLOListElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);

  useEffect(() => () => abort.current?.abort(), []);
  useEffect(() => {
    const el = log.current;
    if (el !== null) el.scrollTop = el.scrollHeight;
  }, [exchanges]);

  async function send(e: Event) {
    e.preventDefault();
    const message = text.trim();
    if (message === '' || busy) return;
    setError(null);
    setAnnounce('');
    setBusy(true);
    setText('');
    const started = performance.now();
    let x = newExchange(message);
    const key = x.key;
    const update = (next: Exchange) => { x = next; setExchanges((all) => all.map((old) => (old.key === key ? next : old))); };
    setExchanges((all) => [...all, x]);
    const controller = new AbortController();
    abort.current = controller;
    try {
      const { error: refusal, response } = await session.api.POST('/v1/agents/{agent_id}/chat', {
        params: { path: { agent_id: agent.id } },
        body: conversationId === null ? { message, stream: true, metadata: { source: PLAYGROUND } } : { message, stream: true, conversation_id: conversationId },
        parseAs: 'stream', signal: controller.signal,
      });
      if (!response.ok || response.body === null) throw errorFromBody(response.status, response.statusText, refusal);
      const parser = createParser({
        onEvent(m) {
          const event = JSON.parse(m.data) as StreamEvent;
          if (event.type === 'conversation') setConversationId(event.conversation_id);
          update(applyEvent(x, event, performance.now() - started));
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      if (x.streaming) update({ ...x, streaming: false, error: x.error ?? 'The stream ended before the reply was complete.' });
      setAnnounce(x.error === null ? 'The agent replied.' : `The reply failed: ${x.error}`);
    } catch (err) {
      if (controller.signal.aborted) return;
      const message = err instanceof ApiError ? err.message : messageOf(err);
      update({ ...x, streaming: false, error: message });
      setError(message);
    } finally {
      if (abort.current === controller) abort.current = null;
      setBusy(false);
    }
  }

  function restart() {
    abort.current?.abort();
    setExchanges([]);
    setConversationId(null);
    setError(null);
    setBusy(false);
    setAnnounce('A new conversation starts with your next message.');
    input.current?.focus();
  }

  return (
    <section class="card playground" aria-labelledby="playground-title">
      <div class="playground-head">
        <h2 id="playground-title" class="card-title">Playground</h2>
        <button type="button" class="btn btn-sm" onClick={restart}>New conversation</button>
      </div>
      <p class="hint">Chat with the agent as saved: each reply shows its sources, tools, usage and timing. Kept out of the inbox.</p>
      {exchanges.length > 0 && <ol class="pg-log" ref={log} aria-label="Playground conversation">{exchanges.map((x) => <ExchangeView key={x.key} x={x} />)}</ol>}
      <p role="status" class="visually-hidden">{announce}</p>
      <form class="pg-compose" onSubmit={send}>
        <ErrorAlert message={error} />
        <label for="playground-message" class="visually-hidden">Message the agent</label>
        <textarea id="playground-message" ref={input} rows={2} class="textarea" placeholder="Message the agent" value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => { if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); e.currentTarget.form?.requestSubmit(); } }} />
        <div class="pg-compose-bar">
          <span class="hint">Enter sends, Shift+Enter starts a new line.</span>
          <button type="submit" class="btn btn-primary btn-sm" disabled={busy || text.trim() === ''}>{busy ? 'Sending…' : 'Send'}</button>
        </div>
      </form>
    </section>
  );
}
