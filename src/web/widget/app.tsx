/**
 * The widget's view: a launcher bubble and a chat panel (a non-modal dialog). Opening the panel focuses
 * the message box; Escape (or the close button) closes it and gives focus back to the launcher. New
 * complete messages are announced through a polite live region; streamed words are not (they would be
 * read one by one).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Citation } from './api.js';
import type { Conversation, Item, Snapshot, ToolLine } from './conversation.js';

/** What the embed tag configures (docs/widget.md). */
export interface WidgetOptions {
  title: string;
  open: boolean;
}

/** The snapshot of `conversation`, re-rendered on every change. */
function useConversation(conversation: Conversation): Snapshot {
  const [snapshot, setSnapshot] = useState(conversation.get());
  useEffect(() => {
    setSnapshot(conversation.get());
    return conversation.subscribe(() => setSnapshot(conversation.get()));
  }, [conversation]);
  return snapshot;
}

const ChatIcon = () => (
  <svg viewBox="0 0 24 24" width="26" height="26" aria-hidden="true" focusable="false">
    <path fill="currentColor" d="M12 3C6.5 3 2 6.9 2 11.7c0 2.4 1.1 4.6 3 6.2-.2 1.3-.8 2.6-1.8 3.6 2 .1 3.9-.6 5.3-1.6 1.1.3 2.3.5 3.5.5 5.5 0 10-3.9 10-8.7S17.5 3 12 3Z" />
  </svg>
);
const CloseIcon = ({ size = 22 }: { size?: number }) => (
  <svg viewBox="0 0 24 24" width={size} height={size} aria-hidden="true" focusable="false">
    <path fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round" d="M6 6l12 12M18 6 6 18" />
  </svg>
);
const SendIcon = () => (
  <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
    <path fill="currentColor" d="M3.4 20.4 21 12 3.4 3.6 3.4 10l12.6 2-12.6 2z" />
  </svg>
);
const StopIcon = () => (
  <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false"><rect x="6" y="6" width="12" height="12" rx="2" fill="currentColor" /></svg>
);
const PersonIcon = () => (
  <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false">
    <path fill="currentColor" d="M12 12a4.5 4.5 0 1 0 0-9 4.5 4.5 0 0 0 0 9Zm0 2c-4.4 0-8 2.2-8 5v2h16v-2c0-2.8-3.6-5-8-5Z" />
  </svg>
);

/** Text with `[n]` citation markers drawn as small numbered badges. */
function Text({ text, citations }: { text: string; citations: Citation[] }) {
  if (citations.length === 0) return <>{text}</>;
  const parts: ComponentChildren[] = [];
  let last = 0;
  for (const m of text.matchAll(/\[(\d{1,2})\]/g)) {
    const n = Number(m[1]);
    if (n < 1 || n > citations.length) continue;
    parts.push(text.slice(last, m.index));
    parts.push(<sup class="ref" key={m.index}><span class="sr">source </span>{n}</sup>);
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return <>{parts}</>;
}

function Sources({ citations }: { citations: Citation[] }) {
  return (
    <div class="sources">
      <div class="sources-head">Sources</div>
      <ol>
        {citations.map((c, i) => (
          <li key={c.chunk_id + i} title={c.snippet}>
            <span class="num" aria-hidden="true">{i + 1}</span>
            <span class="src-title">{c.title}</span>
          </li>
        ))}
      </ol>
    </div>
  );
}

const TOOL_LABELS: Record<string, [string, string]> = {
  search_knowledge: ['Searching the knowledge base…', 'Searched the knowledge base'],
  handoff_to_human: ['Asking a person to join…', 'Asked a person to join'],
};

function Tool({ tool }: { tool: ToolLine }) {
  const [running, done] = TOOL_LABELS[tool.name] ?? [`Using ${tool.name}…`, `Used ${tool.name}`];
  const label = tool.state === 'running' ? running : tool.state === 'failed' ? `${done} (failed)` : done;
  return <div class={`tool ${tool.state}`}><span class="tool-dot" aria-hidden="true" />{label}</div>;
}

function Bubble({ item, onRetry }: { item: Item; onRetry: (item: Item) => void }) {
  if (item.role === 'note') return <li class={`note ${item.state === 'failed' ? 'bad' : ''}`}>{item.text}</li>;
  const who = item.role === 'visitor' ? 'You' : item.role === 'operator' ? 'Team member' : 'Assistant';
  return (
    <li class={`msg ${item.role} ${item.state}`} data-role={item.role} data-id={item.id ?? ''}>
      {item.role === 'operator' && <div class="from"><PersonIcon /> A person from the team</div>}
      <span class="sr">{who}: </span>
      {item.tools.length > 0 && <div class="tools">{item.tools.map((t) => <Tool key={t.id} tool={t} />)}</div>}
      {(item.text !== '' || item.state !== 'failed') && (
        <div class="bubble">
          {item.text === '' && item.state === 'streaming' ? <Dots /> : <Text text={item.text} citations={item.citations} />}
          {item.state === 'streaming' && item.text !== '' && <span class="caret" aria-hidden="true" />}
        </div>
      )}
      {item.citations.length > 0 && item.state !== 'streaming' && <Sources citations={item.citations} />}
      {item.state === 'failed' && (
        <div class="failed-row" role="alert">
          <span>{item.error ?? 'Something went wrong.'}</span>
          {item.retry !== undefined && <button type="button" class="link" onClick={() => onRetry(item)}>Try again</button>}
        </div>
      )}
    </li>
  );
}

const Dots = () => <span class="dots" aria-label="The assistant is typing"><i /><i /><i /></span>;

/** The whole widget: launcher and panel. */
export function Widget({ conversation, options }: { conversation: Conversation; options: WidgetOptions }) {
  const s = useConversation(conversation);
  const [open, setOpen] = useState(options.open);
  const [draft, setDraft] = useState('');
  const launcher = useRef<HTMLButtonElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const log = useRef<HTMLOListElement>(null);
  const stick = useRef(true);
  const wasOpen = useRef(options.open);

  // A saved conversation goes live at once, so replies that come while the panel is closed are counted.
  useEffect(() => conversation.start(), [conversation]);
  // Answers that arrived while the panel was closed (not the history of an earlier visit).
  const seen = useRef(new Set<string>());
  const answers = s.items.filter((i) => i.live && (i.role === 'agent' || i.role === 'operator') && i.state !== 'streaming');
  if (open) for (const i of answers) seen.current.add(i.key);
  const unread = answers.filter((i) => !seen.current.has(i.key)).length;
  // A layout effect, so focus moves in the same task as the panel appears or goes: with a passive effect
  // there is a frame where the closed panel's focus has fallen to <body>.
  useLayoutEffect(() => {
    if (open) input.current?.focus();
    else if (wasOpen.current) launcher.current?.focus();
    wasOpen.current = open;
  }, [open]);
  // Follows new text at the bottom unless the visitor scrolled up to read.
  useLayoutEffect(() => {
    const el = log.current;
    if (el !== null && stick.current) el.scrollTop = el.scrollHeight;
  });

  const submit = () => {
    const text = draft.trim();
    if (text === '' || s.busy) return;
    setDraft('');
    void conversation.send(text);
    input.current?.focus();
  };
  const retry = (item: Item) => { if (item.retry !== undefined) void conversation.send(item.retry, item); };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  };
  const onPanelKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.stopPropagation();
      setOpen(false);
    }
  };
  const subtitle = s.mode === 'person' ? 'You are chatting with our team'
    : s.mode === 'waiting' ? 'Waiting for a person to join…'
      : 'The assistant answers instantly';
  const canAskPerson = s.conversationId !== undefined && s.mode === 'agent';

  return (
    <div class="root">
      {open && (
        <section class="panel" role="dialog" aria-modal="false" aria-labelledby="pw-title" onKeyDown={onPanelKey}>
          <header class="head">
            <div class="avatar" aria-hidden="true">{s.mode === 'person' ? <PersonIcon /> : <ChatIcon />}</div>
            <div class="titles">
              <h2 id="pw-title">{options.title}</h2>
              <p class="sub">{subtitle}</p>
            </div>
            <button type="button" class="icon-btn" aria-label="Close chat" onClick={() => setOpen(false)}><CloseIcon /></button>
          </header>
          {s.link === 'reconnecting' && <div class="banner" role="status">Connection lost. Reconnecting…</div>}
          <ol
            class="log" ref={log} aria-label="Conversation" tabIndex={0}
            onScroll={(e) => {
              const el = e.currentTarget;
              stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
            }}
          >
            <li class="msg agent done greeting"><div class="bubble">Hi! How can we help? Ask a question here, and a person from the team can join if you need one.</div></li>
            {s.items.map((item) => <Bubble key={item.key} item={item} onRetry={retry} />)}
            {s.thinking && <li class="msg agent streaming"><div class="bubble"><Dots /></div></li>}
          </ol>
          <div class="sr" aria-live="polite" role="status">{s.announcement}</div>
          {canAskPerson && (
            <div class="actions">
              <button type="button" class="chip" onClick={() => void conversation.handoff()}><PersonIcon /> Talk to a person</button>
            </div>
          )}
          <form class="compose" onSubmit={(e) => { e.preventDefault(); submit(); }}>
            <label class="sr" for="pw-input">Message</label>
            <textarea
              id="pw-input" ref={input} rows={1} placeholder="Write a message…" value={draft} maxLength={32000}
              onInput={(e) => setDraft(e.currentTarget.value)} onKeyDown={onKey}
            />
            {s.busy && s.mode === 'agent'
              ? <button type="button" class="send stop" aria-label="Stop the answer" onClick={() => void conversation.stop()}><StopIcon /></button>
              : <button type="submit" class="send" aria-label="Send message" disabled={draft.trim() === ''}><SendIcon /></button>}
          </form>
          <div class="foot">Powered by Parley</div>
        </section>
      )}
      <button
        type="button" class="launcher" ref={launcher} aria-expanded={open}
        aria-label={open ? 'Minimize chat' : unread > 0 ? `Open chat, ${unread} new ${unread === 1 ? 'message' : 'messages'}` : 'Open chat'}
        onClick={() => setOpen(!open)}
      >
        {open ? <CloseIcon size={26} /> : <ChatIcon />}
        {!open && unread > 0 && <span class="badge" aria-hidden="true">{unread > 9 ? '9+' : unread}</span>}
      </button>
    </div>
  );
}
