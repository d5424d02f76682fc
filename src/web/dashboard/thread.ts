/**
 * A conversation's messages as the operator's live view shows them, built from the stored messages
 * (`GET /v1/conversations/{id}/messages`) and the frames of the operator socket
 * (`WS /v1/conversations/{id}/ws`, API.md "WebSockets"):
 *
 * - a stored-message frame (`message` with `role` and `content`: visitors, operators, and agent replies
 *   in a catch-up) adds that message, or completes the streamed reply of the same turn;
 * - an agent turn comes as stream frames: `conversation` (its `turn_id`) opens a reply, then `token`
 *   appends, `replace` swaps the whole text, `citations`, `tool_call` and `tool_result` fill it in,
 *   `message` gives its id, and `done` or `error` ends it. Stream frames after `conversation` carry no
 *   turn id; the server writes a turn's frames together (turn-follower.ts), so they belong to the turn
 *   opened last. A turn replayed from its start (after a reconnect) opens the same reply again and
 *   rebuilds it.
 *
 * Nothing is shown twice: messages are keyed by id, replies by turn.
 */
import type { Citation, Frame, Message, MessageRole } from './messages.js';

/** A tool the agent ran, as the view shows it. */
export interface ToolLine {
  id: string;
  name: string;
  /** The result came back. */
  done: boolean;
  isError: boolean;
}

/** One message of the thread. */
export interface ThreadItem {
  /** `msg_...`, or `turn:<turn_id>` for a reply still streaming. */
  key: string;
  id: string | null;
  turnId: string | null;
  role: MessageRole;
  content: string;
  citations: Citation[];
  tools: ToolLine[];
  streaming: boolean;
  /** How the turn ended when it was not a plain stop: `handoff`, `cancelled`, `length`, ... */
  finish: string | null;
  /** The error of a turn that failed. */
  error: string | null;
  createdAt: string;
}

export interface Thread {
  items: ThreadItem[];
  /** The turn the stream frames belong to (the last `conversation` frame), until its `done`/`error`. */
  current: string | null;
}

/** `items` with the element at `at` replaced (Array.prototype.with is newer than the browsers the build targets). */
function replaceAt<T>(items: readonly T[], at: number, item: T): T[] {
  const copy = items.slice();
  copy[at] = item;
  return copy;
}

export const EMPTY_THREAD: Thread = { items: [], current: null };

function fromStored(m: Message): ThreadItem {
  return {
    key: m.id, id: m.id, turnId: m.turn_id, role: m.role, content: m.content, citations: m.citations,
    tools: m.tool_runs.map((t) => ({ id: t.id, name: t.name, done: true, isError: t.is_error })),
    streaming: false, finish: m.finish_reason === 'stop' ? null : m.finish_reason, error: m.error?.message ?? null, createdAt: m.created_at,
  };
}

/** Adds stored messages (in order), each replacing what has its id or, for an agent reply, its turn's streamed reply. */
export function addStored(t: Thread, messages: Message[]): Thread {
  let items = t.items;
  for (const m of messages) {
    const next = fromStored(m);
    const at = items.findIndex((i) => i.id === m.id || (m.role === 'agent' && m.turn_id !== null && i.role === 'agent' && i.turnId === m.turn_id));
    if (at === -1) items = [...items, next];
    else {
      const old = items[at]!;
      // A catch-up frame has no citations or tools: keep what the stream showed.
      items = replaceAt(items, at, { ...next, citations: next.citations.length > 0 ? next.citations : old.citations, tools: next.tools.length > 0 ? next.tools : old.tools });
    }
  }
  return { ...t, items };
}

/** Changes the reply of the current turn. */
function updateCurrent(t: Thread, change: (i: ThreadItem) => ThreadItem): Thread {
  if (t.current === null) return t;
  const at = t.items.findIndex((i) => i.turnId === t.current && i.role === 'agent');
  if (at === -1) return t;
  return { ...t, items: replaceAt(t.items, at, change(t.items[at]!)) };
}

/** The thread after one frame of the operator socket; frames it does not know leave it as it is. */
export function applyFrame(t: Thread, f: Frame): Thread {
  switch (f.type) {
    case 'message': {
      if (typeof f.content === 'string' && typeof f.role === 'string') {
        return addStored(t, [{
          id: String(f.message_id), conversation_id: String(f.conversation_id), turn_id: typeof f.turn_id === 'string' ? f.turn_id : null,
          role: f.role as MessageRole, content: f.content, citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, timing: null,
          created_at: typeof f.created_at === 'string' ? f.created_at : new Date().toISOString(),
        }]);
      }
      const id = String(f.message_id);
      return updateCurrent(t, (i) => ({ ...i, id }));
    }
    case 'conversation': {
      const turnId = String(f.turn_id);
      const fresh: ThreadItem = {
        key: `turn:${turnId}`, id: null, turnId, role: 'agent', content: '', citations: [], tools: [], streaming: true,
        finish: null, error: null, createdAt: new Date().toISOString(),
      };
      const at = t.items.findIndex((i) => i.role === 'agent' && i.turnId === turnId);
      if (at === -1) return { items: [...t.items, fresh], current: turnId };
      // Seen already: stored (nothing to do but ignore the replay) or streaming (rebuilt from the start).
      if (!t.items[at]!.streaming) return { ...t, current: null };
      return { items: replaceAt(t.items, at, { ...fresh, key: t.items[at]!.key }), current: turnId };
    }
    case 'token':
      return updateCurrent(t, (i) => (i.streaming ? { ...i, content: i.content + String(f.delta ?? '') } : i));
    case 'replace':
      return updateCurrent(t, (i) => (i.streaming ? { ...i, content: String(f.delta ?? '') } : i));
    case 'citations':
      return updateCurrent(t, (i) => (i.streaming ? { ...i, citations: (f.citations as Citation[] | undefined) ?? [] } : i));
    case 'tool_call': {
      const call = f.tool_call as { id: string; name: string } | undefined;
      if (call === undefined) return t;
      return updateCurrent(t, (i) => (i.streaming ? { ...i, tools: [...i.tools.filter((x) => x.id !== call.id), { id: call.id, name: call.name, done: false, isError: false }] } : i));
    }
    case 'tool_result': {
      const result = f.tool_result as { tool_call_id: string; name: string; is_error: boolean } | undefined;
      if (result === undefined) return t;
      return updateCurrent(t, (i) => {
        if (!i.streaming) return i;
        const known = i.tools.some((x) => x.id === result.tool_call_id);
        const tools = known
          ? i.tools.map((x) => (x.id === result.tool_call_id ? { ...x, done: true, isError: result.is_error } : x))
          : [...i.tools, { id: result.tool_call_id, name: result.name, done: true, isError: result.is_error }];
        return { ...i, tools };
      });
    }
    case 'done': {
      if (t.current === null) return t;
      const reason = String(f.finish_reason ?? 'stop');
      return { ...updateCurrent(t, (i) => (i.streaming ? { ...i, streaming: false, finish: reason === 'stop' ? null : reason } : i)), current: null };
    }
    case 'error': {
      if (t.current === null) return t;
      const message = (f.error as { message?: string } | undefined)?.message ?? 'The reply failed.';
      return { ...updateCurrent(t, (i) => (i.streaming ? { ...i, streaming: false, error: message } : i)), current: null };
    }
    default:
      return t;
  }
}

/** The newest stored message id of the thread (ids sort by time), for `after_message_id`. */
export function lastStoredId(t: Thread): string | null {
  let last: string | null = null;
  for (const i of t.items) if (i.id !== null && !i.streaming && (last === null || i.id > last)) last = i.id;
  return last;
}
