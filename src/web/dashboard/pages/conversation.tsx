/**
 * An operator's live view of one conversation (API.md "Conversations and handoff", "WebSockets"): the
 * stored messages, then the operator socket (`WS /v1/conversations/{id}/ws?after_message_id=`) for what
 * comes next, the agent's reply streaming as it is written; take over, reply, resolve and close; erase
 * (after a confirmation: `DELETE /v1/conversations/{id}`, owners and admins).
 */
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';
import { ApiError, type Agent, type Conversation, type Frame, type Message, type Page } from '../api.js';
import type { Inbox } from '../inbox.js';
import { LiveSocket, type LiveState } from '../live-socket.js';
import { linkTo, navigate, pathOf } from '../router.js';
import type { Session } from '../session.js';
import { addStored, applyFrame, EMPTY_THREAD, lastStoredId, type Thread, type ThreadItem } from '../thread.js';
import { ErrorAlert, messageOf } from '../ui.js';
import { Avatar, LiveBadge, StatusBadge, timeOf, visitorName } from './inbox-parts.js';

type Action = { kind: 'stored'; messages: Message[] } | { kind: 'frame'; frame: Frame } | { kind: 'reset' };

function reduce(t: Thread, a: Action): Thread {
  if (a.kind === 'reset') return EMPTY_THREAD;
  return a.kind === 'stored' ? addStored(t, a.messages) : applyFrame(t, a.frame);
}

type Verb = 'takeover' | 'resolve' | 'close' | 'erase';

const DONE: Record<Verb, string> = {
  takeover: 'You took over: the agent stays quiet until you resolve.',
  resolve: 'Resolved: the agent answers again.',
  close: 'Closed.',
  erase: '',
};

/** See the file's comment. */
export function ConversationView({ session, conversationId, inbox, agents }: {
  session: Session; conversationId: string; inbox: Inbox; agents: Map<string, Agent>;
}) {
  const [conversation, setConversation] = useState<Conversation | null>(null);
  const [thread, dispatch] = useReducer(reduce, EMPTY_THREAD);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [flash, setFlash] = useState('');
  const [busy, setBusy] = useState<Verb | 'reply' | null>(null);
  const [draft, setDraft] = useState('');
  const [live, setLive] = useState<{ state: LiveState; reason: string | null }>({ state: 'connecting', reason: null });
  const threadRef = useRef(thread);
  threadRef.current = thread;
  const logRef = useRef<HTMLDivElement>(null);
  const replyRef = useRef<HTMLTextAreaElement>(null);
  const takeOverRef = useRef<HTMLButtonElement>(null);
  const titleRef = useRef<HTMLHeadingElement>(null);
  /** Where the focus goes after an action whose button is then disabled (keyboard users keep their place). */
  const focusNext = useRef<HTMLElement | null>(null);
  const stick = useRef(true);

  // Load the conversation and its messages, then follow it live from the last message read.
  useEffect(() => {
    let socket: LiveSocket | null = null;
    let gone = false;
    dispatch({ kind: 'reset' });
    setConversation(null);
    setLoadError(null);
    setActionError(null);
    setFlash('');
    (async () => {
      try {
        const c = await session.request<Conversation>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}`);
        const messages: Message[] = [];
        let after: string | null = null;
        for (;;) {
          const page: Page<Message> = await session.request<Page<Message>>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}/messages?limit=100${after === null ? '' : `&after=${after}`}`);
          messages.push(...page.data);
          if (!page.has_more || page.data.length === 0) break;
          after = page.data.at(-1)!.id;
        }
        if (gone) return;
        setConversation(c);
        dispatch({ kind: 'stored', messages });
        threadRef.current = addStored(threadRef.current, messages);
        socket = new LiveSocket({
          session,
          path: () => {
            const last = lastStoredId(threadRef.current);
            return `/v1/conversations/${encodeURIComponent(conversationId)}/ws${last === null ? '' : `?after_message_id=${last}`}`;
          },
          onFrame: (frame) => {
            if (frame.type === 'status') {
              setConversation((old) => {
                if (old === null) return old;
                const next = { ...old, status: frame.status as Conversation['status'] };
                inbox.update(next);
                return next;
              });
            } else {
              dispatch({ kind: 'frame', frame });
            }
          },
          onState: (state, reason) => setLive({ state, reason }),
          onOpen: (again) => {
            // Statuses that changed while the socket was down: read the conversation again.
            if (again) void session.request<Conversation>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}`).then((fresh) => { if (!gone) setConversation(fresh); }, () => {});
          },
        });
        socket.start();
      } catch (err) {
        if (!gone) setLoadError(messageOf(err));
      }
    })();
    return () => { gone = true; socket?.stop(); };
  }, [session, conversationId, inbox]);

  // After an action, once its button is disabled and the others enabled, move the focus on (in the same
  // task as that render: a passive effect leaves a frame with the focus on <body>).
  useLayoutEffect(() => {
    const target = focusNext.current;
    if (target === null || busy !== null) return;
    focusNext.current = null;
    target.focus();
  }, [busy, conversation]);

  // Keep the newest message in view while the reader is at the bottom.
  useLayoutEffect(() => {
    const el = logRef.current;
    if (el !== null && stick.current) el.scrollTop = el.scrollHeight;
  }, [thread]);

  async function act(verb: Verb) {
    if (verb === 'erase' && !confirm('Erase this conversation for good? Its messages and their text in the webhook history are deleted; this cannot be undone.')) return;
    setBusy(verb);
    setActionError(null);
    setFlash('');
    try {
      if (verb === 'erase') {
        await session.request('DELETE', `/v1/conversations/${encodeURIComponent(conversationId)}`);
        inbox.remove(conversationId);
        navigate('inbox');
        return;
      }
      const c = await session.request<Conversation>('POST', `/v1/conversations/${encodeURIComponent(conversationId)}/${verb}`);
      setConversation(c);
      inbox.update(c);
      setFlash(DONE[verb]);
      // Take over: on to the reply box; resolve: Take over is the next thing to do; close: the title.
      focusNext.current = verb === 'takeover' ? replyRef.current : verb === 'resolve' ? takeOverRef.current : titleRef.current;
    } catch (err) {
      await failed(err);
    } finally {
      setBusy(null);
    }
  }

  async function reply(e: Event) {
    e.preventDefault();
    const content = draft.trim();
    if (content === '' || busy !== null) return;
    setBusy('reply');
    setActionError(null);
    setFlash('');
    try {
      const m = await session.request<Message>('POST', `/v1/conversations/${encodeURIComponent(conversationId)}/messages`, { content });
      dispatch({ kind: 'stored', messages: [m] });
      setDraft('');
      stick.current = true;
    } catch (err) {
      await failed(err);
    } finally {
      setBusy(null);
    }
  }

  /** Shows the API's message; after a 409 the status is read again (someone else changed it). */
  async function failed(err: unknown) {
    setActionError(messageOf(err));
    if (err instanceof ApiError && err.status === 409) {
      try {
        const fresh = await session.request<Conversation>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}`);
        setConversation(fresh);
        inbox.update(fresh);
      } catch {
        // The alert already says what went wrong.
      }
    }
  }

  if (loadError !== null) {
    return (
      <div class="conv-empty">
        <ErrorAlert message={loadError} />
        <a href={pathOf('inbox')} onClick={linkTo('inbox')}>Back to the inbox</a>
      </div>
    );
  }
  if (conversation === null) return <div class="conv-empty" aria-busy="true"><p class="muted">Loading the conversation…</p></div>;

  const status = conversation.status;
  const closed = status === 'closed';
  const agent = agents.get(conversation.agent_id);
  const agentName = agent?.name ?? 'Agent';
  const name = visitorName(conversation);
  const composerHint = closed
    ? 'This conversation is closed: nobody can write in it any more.'
    : status === 'handed_off'
      ? 'You are answering: the agent stays quiet until you resolve.'
      : status === 'pending_handoff'
        ? 'The visitor is waiting for a person. Take over, or just reply.'
        : 'The agent is answering. Take over to answer yourself.';

  return (
    <section class="conv" aria-labelledby="conv-title">
      <header class="conv-head">
        <a href={pathOf('inbox')} class="conv-back btn btn-quiet btn-sm" onClick={linkTo('inbox')}>← Inbox</a>
        <Avatar name={name} />
        <div class="conv-who">
          <h2 id="conv-title" tabIndex={-1} ref={titleRef}>{name}</h2>
          <p class="conv-sub">
            <StatusBadge status={status} />
            <span>via {agentName}</span>
            <LiveBadge state={live.state} reason={live.reason} />
          </p>
        </div>
        <div class="conv-actions" role="group" aria-label="Conversation actions">
          <button type="button" class="btn btn-sm btn-primary" ref={takeOverRef} disabled={busy !== null || !(status === 'active' || status === 'pending_handoff')}
            onClick={() => { void act('takeover'); }}>{busy === 'takeover' ? 'Taking over…' : 'Take over'}</button>
          <button type="button" class="btn btn-sm" disabled={busy !== null || !(status === 'pending_handoff' || status === 'handed_off')}
            title="Hand the conversation back to the agent" onClick={() => { void act('resolve'); }}>{busy === 'resolve' ? 'Resolving…' : 'Resolve'}</button>
          <button type="button" class="btn btn-sm btn-danger-quiet" disabled={busy !== null || closed}
            onClick={() => { void act('close'); }}>{busy === 'close' ? 'Closing…' : 'Close'}</button>
          <button type="button" class="btn btn-sm btn-danger-quiet" disabled={busy !== null}
            onClick={() => { void act('erase'); }}>{busy === 'erase' ? 'Erasing…' : 'Erase conversation'}</button>
        </div>
      </header>
      <div class="conv-log" ref={logRef} role="log" aria-label={`Messages with ${name}`} tabIndex={0}
        onScroll={(e) => { const el = e.currentTarget; stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40; }}>
        <p class="conv-start">Conversation started {timeOf(conversation.created_at, true)}</p>
        {thread.items.map((item) => <Bubble key={item.key} item={item} agentName={agentName} visitor={name} />)}
      </div>
      <footer class="conv-compose">
        <ErrorAlert message={actionError} />
        <p role="status" class="conv-flash">{flash}</p>
        <form onSubmit={reply} class={closed ? 'composer composer-closed' : 'composer'}>
          <label for="reply" class="visually-hidden">{closed ? 'Reply (the conversation is closed)' : `Reply to ${name}`}</label>
          <textarea id="reply" ref={replyRef} rows={3} value={draft} disabled={closed} maxLength={32_000} aria-describedby="reply-hint"
            placeholder={closed ? 'This conversation is closed.' : `Reply to ${name}… (Enter sends, Shift+Enter for a new line)`}
            onInput={(e) => setDraft(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); e.currentTarget.form?.requestSubmit(); }
            }} />
          <div class="composer-bar">
            <p id="reply-hint" class="hint">{composerHint}</p>
            <button type="submit" class="btn btn-primary btn-sm" disabled={closed || busy !== null || draft.trim() === ''}>{busy === 'reply' ? 'Sending…' : 'Send'}</button>
          </div>
        </form>
      </footer>
    </section>
  );
}

const FINISH: Record<string, string> = {
  handoff: 'Handed to a person',
  cancelled: 'Stopped',
  length: 'Cut at the length limit',
  content_filter: 'Replaced by the safety check',
};

/** One message: the visitor on the left; the agent and operators on the right, told apart by colour and label. */
function Bubble({ item, agentName, visitor }: { item: ThreadItem; agentName: string; visitor: string }) {
  const who = item.role === 'visitor' ? visitor : item.role === 'agent' ? agentName : 'Operator';
  const kind = item.role === 'agent' ? 'Agent' : item.role === 'operator' ? 'Person' : null;
  return (
    <article class={`msg msg-${item.role}${item.streaming ? ' msg-streaming' : ''}`} aria-busy={item.streaming ? 'true' : undefined}
      data-role={item.role} data-message-id={item.id ?? undefined}>
      <header class="msg-meta">
        <span class="msg-who">{who}</span>
        {kind !== null && <span class={`msg-kind msg-kind-${item.role}`}>{kind}</span>}
        <time dateTime={item.createdAt}>{item.streaming ? 'writing…' : timeOf(item.createdAt)}</time>
      </header>
      {item.tools.length > 0 && (
        <ul class="msg-tools" aria-label="Tools used">
          {item.tools.map((t) => (
            <li key={t.id} class={t.isError ? 'tool tool-error' : 'tool'}>
              <span aria-hidden="true">⚙</span> {t.done ? (t.isError ? `${t.name} failed` : `Used ${t.name}`) : `Running ${t.name}…`}
            </li>
          ))}
        </ul>
      )}
      <div class="msg-body">
        {item.content}
        {item.streaming && <span class="caret" aria-hidden="true" />}
        {item.content === '' && !item.streaming && item.error === null && <span class="muted">(no text)</span>}
      </div>
      {item.citations.length > 0 && (
        <ol class="msg-sources" aria-label="Sources">
          {item.citations.map((c) => (
            <li key={c.chunk_id} title={c.snippet}><span class="source-title">{c.title}</span> <span class="source-snippet">{c.snippet}</span></li>
          ))}
        </ol>
      )}
      {item.finish !== null && <p class="msg-note">{FINISH[item.finish] ?? `Ended: ${item.finish}`}</p>}
      {item.error !== null && <p class="msg-note msg-error">Failed: {item.error}</p>}
    </article>
  );
}
