/**
 * The organization's conversations as the operator console shows them, kept current by the inbox
 * socket (`WS /v1/inbox/ws?org_id=`, API.md "WebSockets"): one instance per signed-in organization,
 * shared by the inbox page and the navigation's count of conversations waiting for a person.
 *
 * What it holds: every conversation waiting for a person (`GET /v1/conversations?status=pending_handoff`,
 * up to 100), the newest conversations of any status (pages of 50, more on request), and each one's last
 * message when known. Socket frames update them as they happen; a conversation a frame names that is not
 * loaded yet is fetched. Each (re)connection reloads the lists, so nothing that happened while the socket
 * was down is missed.
 *
 * The list endpoint does not carry the last message, so it is read per conversation
 * (`GET /v1/conversations/{id}/messages`), a few at a time, for the conversations loaded by the lists.
 */
import type { Agent, Conversation, ConversationStatus, Frame, Message, MessageRole, Page } from './api.js';
import { LiveSocket, type LiveState } from './live-socket.js';
import type { Session } from './session.js';

/** The last message of a conversation, as the list shows it. */
export interface Preview {
  role: MessageRole;
  content: string;
  created_at: string;
}

/** A conversation in the inbox. */
export interface InboxRow {
  conversation: Conversation;
  preview: Preview | null;
  /** An agent turn is running in it (between `turn.started` and `turn.ended`). */
  answering: boolean;
}

/** What the inbox page renders. */
export interface InboxSnapshot {
  /** Waiting for a person first (newest first), then the rest by last activity, newest first. */
  rows: InboxRow[];
  agents: Map<string, Agent>;
  /** Conversations waiting for a person (`pending_handoff`). */
  waiting: number;
  live: LiveState;
  /** Why the socket stopped or retries. */
  liveReason: string | null;
  /** Null until the first load answered. */
  loaded: boolean;
  error: string | null;
  /** More conversations can be loaded (older ones). */
  hasMore: boolean;
}

const PAGE = 50;
/** Previews read at once. */
const PREVIEW_CONCURRENCY = 3;
/** `metadata.source` of the conversations the agent playground starts (pages/playground.tsx); the inbox leaves them out. */
export const PLAYGROUND = 'playground';

/** See the file's comment. */
export class Inbox {
  private readonly rows = new Map<string, InboxRow>();
  /** Replaced, not changed, when agents load: the page memoizes on its identity. */
  private agents = new Map<string, Agent>();
  private readonly listeners = new Set<(s: InboxSnapshot) => void>();
  private readonly socket: LiveSocket;
  private snapshotMemo: InboxSnapshot | null = null;
  private live: LiveState = 'connecting';
  private liveReason: string | null = null;
  private loaded = false;
  private error: string | null = null;
  private cursor: string | null = null;
  private hasMore = false;
  private readonly previewQueue: string[] = [];
  private previewsRunning = 0;
  private readonly fetching = new Set<string>();
  private stopped = false;
  private notifyScheduled = false;

  constructor(private readonly session: Session, private readonly orgId: string) {
    this.socket = new LiveSocket({
      session,
      path: () => `/v1/inbox/ws?org_id=${encodeURIComponent(this.orgId)}`,
      onFrame: (f) => this.onFrame(f),
      onState: (state, reason) => { this.live = state; this.liveReason = reason; this.changed(); },
      onOpen: () => { void this.reload(); },
    });
  }

  /** Opens the socket (the lists load once it is open, so that no event falls between the two). */
  start(): void {
    this.socket.start();
    void this.loadAgents();
  }

  stop(): void {
    this.stopped = true;
    this.socket.stop();
    this.listeners.clear();
  }

  /** Calls `fn` with every new snapshot; returns the function that stops it. */
  subscribe(fn: (s: InboxSnapshot) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The current state (the same object until something changes). */
  get snapshot(): InboxSnapshot {
    if (this.snapshotMemo !== null) return this.snapshotMemo;
    const rows = [...this.rows.values()].sort(compareRows);
    let waiting = 0;
    for (const r of rows) if (r.conversation.status === 'pending_handoff') waiting++;
    this.snapshotMemo = {
      rows, agents: this.agents, waiting, live: this.live, liveReason: this.liveReason, loaded: this.loaded, error: this.error, hasMore: this.hasMore,
    };
    return this.snapshotMemo;
  }

  /** What the conversation view learned first-hand (a status after an action), so the list agrees at once. */
  update(conversation: Conversation): void {
    const row = this.rows.get(conversation.id);
    this.rows.set(conversation.id, { preview: null, answering: false, ...row, conversation });
    this.changed();
  }

  /** Drops an erased conversation from the list. */
  remove(conversationId: string): void {
    if (this.rows.delete(conversationId)) this.changed();
  }

  /** Loads the next page of older conversations. */
  async loadMore(): Promise<void> {
    if (this.cursor === null) return;
    try {
      const page = await this.session.request<Page<Conversation>>('GET', `/v1/conversations?limit=${PAGE}&exclude_source=${PLAYGROUND}&after=${encodeURIComponent(this.cursor)}`);
      this.merge(page.data);
      this.cursor = page.data.at(-1)?.id ?? null;
      this.hasMore = page.has_more;
      this.changed();
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
      this.changed();
    }
  }

  /** The waiting conversations and the newest page, merged into what is held. */
  private async reload(): Promise<void> {
    try {
      const [waiting, recent] = await Promise.all([
        this.session.request<Page<Conversation>>('GET', `/v1/conversations?status=pending_handoff&limit=100&exclude_source=${PLAYGROUND}`),
        this.session.request<Page<Conversation>>('GET', `/v1/conversations?limit=${PAGE}&exclude_source=${PLAYGROUND}`),
      ]);
      if (this.stopped) return;
      this.merge([...waiting.data, ...recent.data]);
      if (!this.loaded || this.cursor === null) {
        this.cursor = recent.data.at(-1)?.id ?? null;
        this.hasMore = recent.has_more;
      }
      this.loaded = true;
      this.error = null;
    } catch (err) {
      this.error = err instanceof Error ? err.message : String(err);
    }
    this.changed();
  }

  /** Reads the agents again when a conversation names one not known yet (created after the page loaded). */
  private knowAgent(agentId: string): void {
    if (this.agents.has(agentId) || this.agentsLoading) return;
    void this.loadAgents();
  }

  private agentsLoading = false;

  private async loadAgents(): Promise<void> {
    if (this.agentsLoading) return;
    this.agentsLoading = true;
    try {
      const agents = new Map<string, Agent>();
      let after: string | null = null;
      for (let i = 0; i < 10; i++) {
        const page: Page<Agent> = await this.session.request<Page<Agent>>('GET', `/v1/agents?limit=100${after === null ? '' : `&after=${encodeURIComponent(after)}`}`);
        for (const a of page.data) agents.set(a.id, a);
        if (!page.has_more || page.data.length === 0) break;
        after = page.data.at(-1)!.id;
      }
      this.agents = agents;
      this.changed();
    } catch {
      // Agent names are a nicety: rows show no agent name without them.
    } finally {
      this.agentsLoading = false;
    }
  }

  private merge(conversations: Conversation[]): void {
    for (const c of conversations) {
      const row = this.rows.get(c.id);
      // A frame may have told of a newer status than this (older) read: keep the newer.
      if (row !== undefined && row.conversation.updated_at > c.updated_at) continue;
      this.rows.set(c.id, { preview: null, answering: false, ...row, conversation: c });
      if (row?.preview == null) this.queuePreview(c.id);
      this.knowAgent(c.agent_id);
    }
  }

  private onFrame(f: Frame): void {
    const id = typeof f.conversation_id === 'string' ? f.conversation_id : null;
    if (id === null) return;
    if (this.ignored.has(id)) return;
    const row = this.rows.get(id);
    if (row === undefined) {
      // Not loaded (new, or older than the pages held): read it, then the frames from here on apply.
      if (f.type === 'message.created') this.pendingPreview.set(id, previewOf(f));
      void this.fetchConversation(id);
      return;
    }
    switch (f.type) {
      case 'conversation.status':
        // The frame has no time; the server's updated_at comes with the next read.
        row.conversation = { ...row.conversation, status: f.status as ConversationStatus };
        break;
      case 'message.created': {
        const preview = previewOf(f);
        row.preview = preview;
        row.conversation = { ...row.conversation, updated_at: preview.created_at > row.conversation.updated_at ? preview.created_at : row.conversation.updated_at };
        break;
      }
      case 'turn.started':
        row.answering = true;
        break;
      case 'turn.ended':
        row.answering = false;
        break;
      default:
        return;
    }
    this.rows.set(id, { ...row });
    this.changed();
  }

  /** Conversations of the agent playground (`metadata.source: "playground"`): not the inbox's; their frames are dropped. */
  private readonly ignored = new Set<string>();

  /** Previews that arrived for a conversation being fetched. */
  private readonly pendingPreview = new Map<string, Preview>();

  private async fetchConversation(id: string): Promise<void> {
    if (this.fetching.has(id)) return;
    this.fetching.add(id);
    try {
      const c = await this.session.request<Conversation>('GET', `/v1/conversations/${encodeURIComponent(id)}`);
      if (this.stopped) return;
      if (c.metadata.source === PLAYGROUND) {
        this.ignored.add(id);
        this.pendingPreview.delete(id);
        return;
      }
      const preview = this.pendingPreview.get(id) ?? null;
      this.pendingPreview.delete(id);
      this.knowAgent(c.agent_id);
      const row = this.rows.get(id);
      if (row === undefined) {
        this.rows.set(id, { conversation: c, preview, answering: false });
        if (preview === null) this.queuePreview(id);
      } else {
        this.rows.set(id, { ...row, conversation: row.conversation.updated_at > c.updated_at ? row.conversation : c });
      }
      this.changed();
    } catch {
      // Gone (deleted) or unreachable: the next reload settles it.
    } finally {
      this.fetching.delete(id);
    }
  }

  private queuePreview(id: string): void {
    if (!this.previewQueue.includes(id)) this.previewQueue.push(id);
    this.pumpPreviews();
  }

  private pumpPreviews(): void {
    while (this.previewsRunning < PREVIEW_CONCURRENCY && this.previewQueue.length > 0) {
      const id = this.previewQueue.shift()!;
      this.previewsRunning++;
      void this.readPreview(id).finally(() => { this.previewsRunning--; this.pumpPreviews(); });
    }
  }

  /** The last message of conversation `id` (paging through its messages, oldest first). */
  private async readPreview(id: string): Promise<void> {
    if (this.stopped) return;
    try {
      let last: Message | undefined;
      let after: string | null = null;
      for (let i = 0; i < 20; i++) {
        const page: Page<Message> = await this.session.request<Page<Message>>('GET', `/v1/conversations/${encodeURIComponent(id)}/messages?limit=100${after === null ? '' : `&after=${after}`}`);
        last = page.data.at(-1) ?? last;
        if (!page.has_more || page.data.length === 0) break;
        after = last!.id;
      }
      const row = this.rows.get(id);
      if (row === undefined || last === undefined || row.preview !== null) return;
      this.rows.set(id, { ...row, preview: { role: last.role, content: last.content, created_at: last.created_at } });
      this.changed();
    } catch {
      // No preview for this one.
    }
  }

  /** Notifies once per task, however many frames arrived in it. */
  private changed(): void {
    this.snapshotMemo = null;
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      const s = this.snapshot;
      for (const fn of this.listeners) fn(s);
    });
  }
}

function previewOf(f: Frame): Preview {
  return { role: f.role as MessageRole, content: String(f.content ?? ''), created_at: typeof f.created_at === 'string' ? f.created_at : new Date().toISOString() };
}

/** Waiting for a person first, then by last activity, newest first. */
function compareRows(a: InboxRow, b: InboxRow): number {
  const pa = a.conversation.status === 'pending_handoff' ? 0 : 1;
  const pb = b.conversation.status === 'pending_handoff' ? 0 : 1;
  if (pa !== pb) return pa - pb;
  const ta = a.preview !== null && a.preview.created_at > a.conversation.updated_at ? a.preview.created_at : a.conversation.updated_at;
  const tb = b.preview !== null && b.preview.created_at > b.conversation.updated_at ? b.preview.created_at : b.conversation.updated_at;
  return ta < tb ? 1 : ta > tb ? -1 : 0;
}
