import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { ConversationListFilter, ConversationRecord, MessageRecord, Page, PageRequest } from '../../store/records.js';

/** Reading conversations and their messages (API.md "Conversations and handoff"), scoped by organization. */
export class ConversationService {
  constructor(private readonly store: Store) {}

  list(orgId: string, filter: ConversationListFilter, page: PageRequest): Promise<Page<ConversationRecord>> {
    return this.store.conversations.list(orgId, filter, page);
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
}
