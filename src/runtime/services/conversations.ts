import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { ConversationListFilter, ConversationRecord, MessageRecord, Page, PageRequest } from '../../store/records.js';

/** Reading conversations and their messages (API.md "Conversations and handoff"), scoped by organization. */
export class ConversationService {
  constructor(private readonly store: Store) {}

  list(orgId: string, filter: ConversationListFilter, page: PageRequest): Promise<Page<ConversationRecord>> {
    return this.store.conversations.list(orgId, filter, page);
  }

  /** The organization of conversation `id`, or undefined (the org of a socket opened with a person's token). */
  orgOf(conversationId: string): Promise<string | undefined> {
    return this.store.conversations.orgOf(conversationId);
  }

  /** The conversation; throws AppError `not_found`. */
  async get(orgId: string, conversationId: string): Promise<ConversationRecord> {
    const c = await this.store.conversations.get(orgId, conversationId);
    if (!c) throw new AppError('not_found', 'No such conversation.');
    return c;
  }

  /**
   * The conversation's messages in the order they were stored (SPEC.md 4 rule 5: how a client recovers
   * after a dropped stream). Throws AppError `not_found`.
   */
  async messages(orgId: string, conversationId: string, page: PageRequest): Promise<Page<MessageRecord>> {
    const c = await this.get(orgId, conversationId);
    return this.store.conversations.listMessages(orgId, c.id, page);
  }

  /**
   * Every message of the conversation stored after message `afterId` (all of them when undefined), in
   * order, at most `max` (the oldest ones; default 10,000), read in pages of 100: the catch-up of a
   * socket that joins (API.md "WebSockets", listen-only). Throws AppError `validation_failed` when
   * `afterId` names no message of this conversation.
   */
  async messagesAfter(orgId: string, conversationId: string, afterId: string | undefined, max = 10_000): Promise<MessageRecord[]> {
    const out: MessageRecord[] = [];
    let after = afterId;
    for (;;) {
      const page = await this.store.conversations.listMessages(orgId, conversationId, { limit: 100, after });
      out.push(...page.data);
      if (!page.has_more || out.length >= max || page.data.length === 0) break;
      after = page.data[page.data.length - 1]!.id;
    }
    return out.length > max ? out.slice(0, max) : out;
  }
}
