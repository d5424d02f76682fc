/**
 * The visitor's conversation as the widget shows it, fed from three sources that overlap: the stream of
 * a message the visitor sends (SSE), the listen-only socket (catch-up, operator pushes, agent turns),
 * and the public messages twin (history, catch-up after a drop). Each message is shown once:
 * stored messages are deduplicated by id (and a visitor's own message, sent before its id is known, by
 * its turn id or text); a turn's events are numbered (the SSE id's seq, or the count of the socket's
 * frames of that turn, API.md "WebSockets") and an event is applied only when its number is past the
 * last one applied, so a turn followed by both the stream and the socket is drawn once.
 *
 * The visitor token and conversation id live in localStorage under `parley.widget.<public key>`, so a
 * reload or a return visit shows the same conversation (API.md "Credentials": visitor tokens).
 */
import { ApiError, type Citation, type PublicApi, type StoredMessage, type StreamEvent } from './api.js';

/** A quiet line under an answer: a tool the agent used. */
export interface ToolLine {
  id: string;
  name: string;
  state: 'running' | 'done' | 'failed';
}

/** One bubble of the conversation. */
export interface Item {
  /** Stable key for rendering. */
  key: string;
  /** The stored message's id, once known. */
  id: string | undefined;
  role: 'visitor' | 'agent' | 'operator' | 'note';
  text: string;
  turnId: string | undefined;
  citations: Citation[];
  tools: ToolLine[];
  /** `streaming` while tokens arrive, `failed` for an error (with `error` and, when it can be asked again, `retry`). */
  state: 'sending' | 'streaming' | 'done' | 'failed';
  error: string | undefined;
  /** The question to send again from the retry prompt. */
  retry: string | undefined;
  /** False for what the first load of the history showed; true for what came after (counted as unread). */
  live: boolean;
}

/** Who answers the visitor now, as far as the widget can tell. */
export type Mode = 'agent' | 'waiting' | 'person';

/** The connection to Parley's live feed. */
export type Link = 'idle' | 'connecting' | 'live' | 'reconnecting';

/** What the panel renders. */
export interface Snapshot {
  items: readonly Item[];
  mode: Mode;
  link: Link;
  /** True while the agent is working on a turn and has not written a word yet (the typing dots). */
  thinking: boolean;
  /** True while a turn of the visitor's runs (send is then disabled, stop is offered). */
  busy: boolean;
  conversationId: string | undefined;
  /** The last completed message, for the screen-reader announcement. */
  announcement: string;
}

/** What is kept per public key in localStorage. */
interface Saved {
  conversation_id: string;
  visitor_token: string;
  mode?: Mode;
}

/** Per turn: the last event number applied, and the bubble it draws into (created at its first visible event). */
interface TurnState {
  seq: number;
  item: Item | undefined;
  ended: boolean;
}

/** Backoff of reconnects, ms: 0.5 s doubling to 15 s, with up to 30 % jitter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(15_000, 500 * 2 ** attempt);
  return Math.round(base * (1 + Math.random() * 0.3));
}

const HANDOFF_TOOL = 'handoff_to_human';

/** The conversation of one visitor with one published agent. */
export class Conversation {
  private items: Item[] = [];
  private readonly ids = new Set<string>();
  private readonly turns = new Map<string, TurnState>();
  private saved: Saved | undefined;
  private mode: Mode = 'agent';
  private link: Link = 'idle';
  private announcement = '';
  private activeTurn: string | undefined;
  private sending = false;
  private socket: WebSocket | undefined;
  /** The turn the socket's frames belong to now, and how many frames of it came. */
  private socketTurn: { id: string; seq: number } | undefined;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private started = false;
  /** Whether the saved conversation's history has been shown (what comes later is live). */
  private loaded = false;
  private seq = 0;
  private readonly listeners = new Set<() => void>();
  private snapshot: Snapshot;
  private readonly storageKey: string;

  constructor(private readonly api: PublicApi) {
    this.storageKey = `parley.widget.${api.publicKey}`;
    this.snapshot = this.build();
    addEventListener('online', () => { if (this.link === 'reconnecting') this.reconnectNow(); });
    addEventListener('offline', () => this.dropped());
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(): Snapshot {
    return this.snapshot;
  }

  /** Loads the saved conversation (history, then live) once; later calls do nothing. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.saved = this.load();
    if (this.saved?.mode !== undefined) this.mode = this.saved.mode;
    if (this.saved !== undefined) void this.connect();
    else this.loaded = true;
  }

  /** Sends the visitor's `text` as a new turn and streams its answer. */
  async send(text: string, retryOf?: Item): Promise<void> {
    const message = text.trim();
    if (message === '' || this.sending) return;
    if (retryOf !== undefined) this.items = this.items.filter((i) => i !== retryOf);
    this.sending = true;
    const mine = this.add({ role: 'visitor', text: message, state: 'sending' });
    let turnId: string | undefined;
    try {
      const saved = this.saved;
      await this.api.chat(
        saved === undefined ? { message } : { message, conversation_id: saved.conversation_id, visitor_token: saved.visitor_token },
        (event, seq) => {
          if (event.type === 'conversation') {
            turnId = event.turn_id!;
            mine.turnId = turnId;
            mine.state = 'done';
            this.activeTurn = turnId;
            if (this.saved === undefined && event.visitor_token !== undefined) {
              this.saved = { conversation_id: event.conversation_id!, visitor_token: event.visitor_token };
              this.save();
              void this.connect();
            }
          }
          if (turnId !== undefined) this.turnEvent(turnId, seq, event);
        },
      );
      if (turnId === undefined) throw new ApiError(0, 'network_error', 'The chat service sent no answer.');
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, 'network_error', String(err));
      if (turnId === undefined) {
        // Nothing was stored: the question can be sent again.
        // A conversation that is gone, or closed by the team: the next try starts a new one.
        const ended = (e.code === 'not_found' || e.code === 'conversation_closed') && this.saved !== undefined;
        if (ended) this.forget();
        mine.state = 'failed';
        mine.error = ended ? 'This conversation has ended. Try again to start a new one.' : this.describe(e);
        mine.retry = message;
      } else {
        // The turn goes on server-side: the socket's catch-up brings its answer (never ask again).
        this.dropped();
      }
    } finally {
      this.sending = false;
      if (this.activeTurn === turnId && (turnId === undefined || this.turns.get(turnId)?.ended)) this.activeTurn = undefined;
      this.changed();
    }
  }

  /** Stops the running turn of the visitor (its partial answer is kept). */
  async stop(): Promise<void> {
    const turn = this.activeTurn;
    if (turn === undefined || this.saved === undefined) return;
    try { await this.api.cancel(this.saved.conversation_id, turn, this.saved.visitor_token); } catch { /* the turn ends anyway */ }
  }

  /** The visitor asks for a person (the public handoff). */
  async handoff(): Promise<void> {
    if (this.saved === undefined) return;
    try {
      await this.api.handoff(this.saved.conversation_id, this.saved.visitor_token);
      this.setMode('waiting');
      this.add({ role: 'note', text: 'We have asked a person from the team to join. They will answer here.', state: 'done' });
    } catch (err) {
      this.add({ role: 'note', text: err instanceof ApiError ? this.describe(err) : 'Could not reach a person right now.', state: 'failed' });
    }
    this.changed();
  }

  /** Starts a new conversation (forgets the saved one). */
  reset(): void {
    this.forget();
    this.items = [];
    this.ids.clear();
    this.turns.clear();
    this.mode = 'agent';
    this.changed();
  }

  // The live feed: history or catch-up through the messages twin, then the listen-only socket.

  private async connect(): Promise<void> {
    const saved = this.saved;
    if (saved === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.closeSocket();
    this.setLink(this.attempt === 0 && this.link === 'idle' ? 'connecting' : 'reconnecting');
    try {
      const first = this.ids.size === 0;
      const keep = saved.mode;
      const history = await this.api.messages(saved.conversation_id, saved.visitor_token, this.lastId());
      if (this.saved !== saved) return;
      for (const m of history) this.stored(m);
      // On a reload, who answers is what was saved (a handoff asked by the button leaves no message).
      if (first && keep !== undefined) this.setMode(keep);
      this.loaded = true;
      this.changed();
    } catch (err) {
      if (this.saved !== saved) return;
      if (err instanceof ApiError && (err.status === 401 || err.status === 404)) {
        // The conversation is gone (or the agent unpublished): start afresh.
        this.reset();
        this.setLink('idle');
        return;
      }
      this.retryLater();
      return;
    }
    const ws = new WebSocket(this.api.listenUrl(saved.conversation_id));
    this.socket = ws;
    this.socketTurn = undefined;
    ws.onopen = () => {
      const after = this.lastId();
      ws.send(JSON.stringify({ type: 'auth', visitor_token: saved.visitor_token, ...(after === undefined ? {} : { after_message_id: after }) }));
      this.attempt = 0;
      this.setLink('live');
    };
    ws.onmessage = (e) => {
      if (this.socket !== ws) return;
      try { this.frame(JSON.parse(String(e.data)) as StreamEvent); } catch { /* not ours */ }
    };
    ws.onclose = (e) => {
      if (this.socket !== ws) return;
      this.socket = undefined;
      if (e.code === 4401 || e.code === 4404) {
        this.reset();
        this.setLink('idle');
        return;
      }
      this.retryLater();
    };
  }

  /** A frame of the listen-only socket. */
  private frame(f: StreamEvent): void {
    if (f.type === 'pong') return;
    if (f.type === 'status') {
      // Who answers now: a resolve shows at once, not only when the agent next speaks.
      if (f.status === 'active') this.setMode('agent');
      else if (f.status === 'pending_handoff') this.setMode('waiting');
      else if (f.status === 'handed_off') this.setMode('person');
      this.changed();
      return;
    }
    if (f.type === 'error') {
      if (f.retry_after === undefined && this.socketTurn !== undefined) this.socketTurnEvent(f);
      return;
    }
    if (f.role === 'operator' && f.content === undefined) {
      // An operator's push: token (the whole text), message (its id), done.
      if (f.type === 'token') this.operatorText(f.delta ?? '');
      else if (f.type === 'message' && f.message_id !== undefined) this.operatorId(f.message_id);
      this.changed();
      return;
    }
    if (f.type === 'message' && f.content !== undefined && f.role !== undefined) {
      // A stored message of the catch-up.
      this.stored({ id: f.message_id!, conversation_id: f.conversation_id ?? '', turn_id: f.turn_id ?? null, role: f.role, content: f.content });
      this.changed();
      return;
    }
    if (f.type === 'conversation' && f.turn_id !== undefined) this.socketTurn = { id: f.turn_id, seq: 0 };
    this.socketTurnEvent(f);
  }

  private socketTurnEvent(f: StreamEvent): void {
    const t = this.socketTurn;
    if (t === undefined) return;
    t.seq += 1;
    this.turnEvent(t.id, t.seq, f);
    if (f.type === 'done' || f.type === 'error') this.socketTurn = undefined;
  }

  private retryLater(): void {
    this.setLink('reconnecting');
    clearTimeout(this.timer);
    if (typeof navigator !== 'undefined' && navigator.onLine === false) return; // the `online` event reconnects
    this.timer = setTimeout(() => void this.connect(), backoffMs(this.attempt++));
  }

  private reconnectNow(): void {
    this.attempt = 0;
    void this.connect();
  }

  /** The connection dropped (offline, stream cut): close the socket and reconnect with backoff. */
  private dropped(): void {
    if (this.saved === undefined) return;
    this.closeSocket();
    this.retryLater();
  }

  private closeSocket(): void {
    const ws = this.socket;
    this.socket = undefined;
    if (ws !== undefined) {
      ws.onclose = null;
      ws.onmessage = null;
      try { ws.close(); } catch { /* already closed */ }
    }
  }

  // Applying what arrives.

  /** A turn's event number `seq` (1 = `conversation`); events at or before the last applied are ignored. */
  private turnEvent(turnId: string, seq: number, e: StreamEvent): void {
    let t = this.turns.get(turnId);
    if (t === undefined) this.turns.set(turnId, (t = { seq: 0, item: undefined, ended: false }));
    if (seq !== 0 && seq <= t.seq) return;
    if (seq !== 0) t.seq = seq;
    const bubble = (): Item => {
      if (t.item === undefined) {
        t.item = this.items.find((i) => i.role === 'agent' && i.turnId === turnId) ?? this.add({ role: 'agent', text: '', state: 'streaming', turnId });
      }
      return t.item;
    };
    switch (e.type) {
      case 'conversation':
        if (this.mode === 'agent' && !t.ended) this.activeTurn ??= turnId;
        break;
      case 'token':
        // The agent speaks again (after a person resolved the handoff); a handoff later in the turn says otherwise.
        if (t.item === undefined && this.mode !== 'agent') this.setMode('agent');
        bubble().text += e.delta ?? '';
        break;
      case 'replace':
        bubble().text = e.delta ?? '';
        break;
      case 'tool_call':
        if (e.tool_call !== undefined) bubble().tools.push({ id: e.tool_call.id, name: e.tool_call.name, state: 'running' });
        break;
      case 'tool_result': {
        const r = e.tool_result;
        const line = r === undefined ? undefined : t.item?.tools.find((l) => l.id === r.tool_call_id);
        if (line !== undefined) line.state = r!.is_error ? 'failed' : 'done';
        if (r?.name === HANDOFF_TOOL && !r.is_error) this.setMode('waiting');
        break;
      }
      case 'citations':
        bubble().citations = e.citations ?? [];
        break;
      case 'message':
        if (t.item !== undefined && e.message_id !== undefined) {
          t.item.id = e.message_id;
          this.ids.add(e.message_id);
        } else if (e.message_id !== undefined) {
          this.ids.add(e.message_id); // the visitor's message forwarded to a person: no bubble of its own
        }
        break;
      case 'done':
        t.ended = true;
        if (t.item !== undefined) {
          t.item.state = 'done';
          this.announce(t.item);
        }
        if (e.finish_reason === 'handoff' && this.mode === 'agent') this.setMode('waiting');
        if (this.activeTurn === turnId) this.activeTurn = undefined;
        break;
      case 'error': {
        t.ended = true;
        const item = bubble();
        item.state = 'failed';
        item.error = e.error?.message ?? 'Something went wrong.';
        const question = this.items.find((i) => i.role === 'visitor' && i.turnId === turnId);
        item.retry = question?.text;
        if (this.activeTurn === turnId) this.activeTurn = undefined;
        this.announcement = `Error: ${item.error}`;
        break;
      }
    }
    this.changed();
  }

  /** A stored message (history, catch-up): added unless shown already; completes a bubble drawn from a stream. */
  private stored(m: StoredMessage): void {
    if (this.ids.has(m.id)) {
      const known = this.items.find((i) => i.id === m.id);
      if (known !== undefined && m.citations !== undefined && known.citations.length === 0) known.citations = m.citations;
      return;
    }
    this.ids.add(m.id);
    if (m.role === 'visitor') {
      const mine = this.items.find((i) => i.role === 'visitor' && i.id === undefined && ((m.turn_id !== null && i.turnId === m.turn_id) || (i.turnId === undefined && i.text === m.content)));
      if (mine !== undefined) {
        mine.id = m.id;
        mine.turnId ??= m.turn_id ?? undefined;
        return;
      }
    }
    if (m.role === 'agent' && m.turn_id !== null) {
      const t = this.turns.get(m.turn_id);
      const drawn = t?.item ?? this.items.find((i) => i.role === 'agent' && i.turnId === m.turn_id);
      if (drawn !== undefined) {
        drawn.id = m.id;
        drawn.text = m.content;
        if (m.citations !== undefined && m.citations.length > 0) drawn.citations = m.citations;
        drawn.state = m.status === 'failed' ? 'failed' : 'done';
        if (t !== undefined) t.ended = true;
        return;
      }
      // The stored reply ends that turn: a stream of it that comes later draws nothing.
      this.turns.set(m.turn_id, { seq: Number.MAX_SAFE_INTEGER, item: undefined, ended: true });
    }
    const failed = m.status === 'failed';
    const item = this.add({
      id: m.id, role: m.role, text: m.content, turnId: m.turn_id ?? undefined, state: failed ? 'failed' : 'done',
      citations: m.citations ?? [],
      tools: (m.tool_runs ?? []).map((r) => ({ id: r.id, name: r.name, state: r.is_error ? 'failed' as const : 'done' as const })),
      error: failed ? (m.error?.message ?? 'This answer could not be finished.') : undefined,
    });
    // Who answers now is saved with the conversation; history only adds what it shows for certain.
    if (m.role === 'operator') this.setMode('person');
    else if (m.role === 'agent' && this.handedOffBy(item)) this.setMode('waiting');
    this.announce(item);
  }

  private handedOffBy(item: Item): boolean {
    return item.tools.some((t) => t.name === HANDOFF_TOOL && t.state === 'done');
  }

  /** An operator's pushed text: a bubble waiting for its id. */
  private operatorText(text: string): void {
    this.add({ role: 'operator', text, state: 'done' });
    this.setMode('person');
  }

  private operatorId(id: string): void {
    const pending = [...this.items].reverse().find((i) => i.role === 'operator' && i.id === undefined);
    if (this.ids.has(id)) {
      if (pending !== undefined) this.items = this.items.filter((i) => i !== pending);
      return;
    }
    this.ids.add(id);
    if (pending !== undefined) {
      pending.id = id;
      this.announce(pending);
    }
  }

  // Plumbing.

  private add(fields: Partial<Item> & Pick<Item, 'role' | 'text' | 'state'>): Item {
    const item: Item = {
      key: `i${++this.seq}`, id: undefined, turnId: undefined, citations: [], tools: [], error: undefined, retry: undefined, live: this.loaded, ...fields,
    };
    this.items.push(item);
    if (item.id !== undefined) this.ids.add(item.id);
    return item;
  }

  /** The newest stored message id shown (ids sort by time, API.md "Conventions"). */
  private lastId(): string | undefined {
    let last: string | undefined;
    for (const id of this.ids) if (last === undefined || id > last) last = id;
    return last;
  }

  private announce(item: Item): void {
    const who = item.role === 'operator' ? 'Team member' : item.role === 'agent' ? 'Assistant' : undefined;
    if (who !== undefined && item.text !== '') this.announcement = `${who}: ${item.text}`;
  }

  private setMode(mode: Mode): void {
    if (this.mode === mode) return;
    this.mode = mode;
    if (this.saved !== undefined) {
      this.saved.mode = mode;
      this.save();
    }
  }

  private setLink(link: Link): void {
    if (this.link === link) return;
    this.link = link;
    this.changed();
  }

  private describe(e: ApiError): string {
    if (e.status === 0) return 'You seem to be offline. Your message was not sent.';
    if (e.status === 429) return 'Too many messages at once. Wait a moment and try again.';
    if (e.status === 503) return 'The assistant is busy right now. Try again in a moment.';
    return e.message;
  }

  private load(): Saved | undefined {
    try {
      const raw = localStorage.getItem(this.storageKey);
      if (raw === null) return undefined;
      const v = JSON.parse(raw) as Partial<Saved>;
      if (typeof v.conversation_id === 'string' && typeof v.visitor_token === 'string') return v as Saved;
    } catch { /* storage blocked or corrupt */ }
    return undefined;
  }

  private save(): void {
    try { if (this.saved !== undefined) localStorage.setItem(this.storageKey, JSON.stringify(this.saved)); } catch { /* storage blocked */ }
  }

  /** Drops the saved conversation; what is on screen stays, but ids of it no longer steer catch-up. */
  private forget(): void {
    this.saved = undefined;
    this.mode = 'agent';
    this.ids.clear();
    this.turns.clear();
    this.closeSocket();
    clearTimeout(this.timer);
    try { localStorage.removeItem(this.storageKey); } catch { /* storage blocked */ }
  }

  private build(): Snapshot {
    const active = this.activeTurn === undefined ? undefined : this.turns.get(this.activeTurn);
    return {
      items: [...this.items],
      mode: this.mode,
      link: this.link,
      thinking: active !== undefined && !active.ended && active.item === undefined && this.mode === 'agent',
      busy: this.sending || (active !== undefined && !active.ended),
      conversationId: this.saved?.conversation_id,
      announcement: this.announcement,
    };
  }

  private changed(): void {
    this.snapshot = this.build();
    for (const l of this.listeners) l();
  }
}
