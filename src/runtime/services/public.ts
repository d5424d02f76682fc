import { hashOpaqueToken, isOpaqueToken } from '../../auth/opaque-tokens.js';
import { TokenBuckets } from '../../auth/token-buckets.js';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/ports.js';
import type { AgentRecord, ConversationRecord, MessageRecord, Page, PageRequest } from '../../store/records.js';
import type { AgentDirectory } from '../agent-directory.js';
import { visitorTokenMatches, type ChatInput, type ChatService, type TurnOptions } from '../chat-service.js';
import type { CancelOutcome } from '../conversation-control.js';
import type { TurnChannel } from '../turn/turn-channel.js';

/** Rate limits of the public endpoints (API.md "WebSockets": per client address and per visitor token). */
export interface PublicLimits {
  /** Public requests, socket upgrades and socket message frames per client address per minute (token bucket). */
  perAddressPerMinute: number;
  /** Messages and requests carrying one visitor token per minute (token bucket). */
  perVisitorPerMinute: number;
  /** Current time, ms (default Date.now); tests pass a fixed clock. */
  now?: () => number;
  /**
   * Processes sharing the limits (the live processes of the store, src/cluster/process-registry.ts): each
   * keeps its share of both budgets (TokenBucketOptions.divisor). Default 1.
   */
  processes?: () => number;
}

/** A public conversation, checked against its visitor token. */
export interface VisitorConversation {
  agent: AgentRecord;
  conversation: ConversationRecord;
}

/**
 * The public endpoints of published agents (API.md "Chat", "Credentials", "WebSockets"): a public key
 * (`pk_...`) names one published agent and grants chat with it and nothing else; a visitor token
 * (`vt_...`, issued in the first `conversation` event of a public conversation) grants reading,
 * continuing, listening to, handing off and stopping that one conversation.
 *
 * Refusals: an unknown or unpublished key is 404 `not_found`; a missing visitor token is 401
 * `missing_credentials`; a wrong one, or a conversation of another agent or not started publicly, is 404
 * `not_found` (API.md "Errors": never tell whether it exists), and so is a visitor token of a conversation
 * started through an earlier key of the agent (unpublishing ends every visitor token of the agent, for good);
 * an Origin the agent does not allow is 403
 * `origin_not_allowed`; past a rate limit, 429 `rate_limited` with `Retry-After` (seconds).
 */
export class PublicService {
  private readonly byAddress: TokenBuckets;
  private readonly byVisitor: TokenBuckets;

  constructor(
    private readonly store: Store,
    private readonly agents: AgentDirectory,
    private readonly chat: ChatService,
    limits: PublicLimits,
  ) {
    const now = limits.now ?? Date.now;
    this.byAddress = new TokenBuckets({ capacity: limits.perAddressPerMinute, windowMs: 60_000, now, divisor: limits.processes });
    this.byVisitor = new TokenBuckets({ capacity: limits.perVisitorPerMinute, windowMs: 60_000, now, divisor: limits.processes });
  }

  /** The published agent of `publicKey`. Throws AppError `not_found`. */
  async agent(publicKey: string): Promise<AgentRecord> {
    const found = this.agents.byPublicKey(publicKey);
    const agent = found instanceof Promise ? await found : found;
    if (agent === undefined || !agent.published) throw new AppError('not_found', 'No published agent has this public key.');
    return agent;
  }

  /** The allowed origins of the agent published under `publicKey`, or undefined when there is none (CORS). */
  async allowedOrigins(publicKey: string): Promise<string[] | undefined> {
    const found = this.agents.byPublicKey(publicKey);
    const agent = found instanceof Promise ? await found : found;
    return agent?.published ? agent.allowed_origins : undefined;
  }

  /**
   * Takes one request of client `address` (and of `visitorToken`, when given) from the rate limits.
   * Throws AppError 429 `rate_limited` with `Retry-After` (whole seconds, at least 1); nothing is taken
   * from a bucket that refuses.
   */
  limit(address: string, visitorToken?: string): void {
    const waitMs = this.byAddress.take(address);
    if (waitMs > 0) throw rateLimited(waitMs, 'client address');
    if (visitorToken === undefined) return;
    const visitorWait = this.byVisitor.take(hashOpaqueToken(visitorToken));
    if (visitorWait > 0) {
      this.byAddress.refund(address);
      throw rateLimited(visitorWait, 'visitor token');
    }
  }

  /**
   * The conversation `conversationId` of the agent of `publicKey`, if `visitorToken` is its visitor token.
   * Throws AppError `not_found` (key, conversation or token) or `missing_credentials` (no token).
   */
  async conversation(publicKey: string, conversationId: string, visitorToken: string | undefined): Promise<VisitorConversation> {
    const agent = await this.agent(publicKey);
    if (visitorToken === undefined || visitorToken === '') {
      throw new AppError('missing_credentials', 'Send the visitor token of this conversation (X-Visitor-Token, or visitor_token in the frame).');
    }
    const conversation = await this.store.conversations.get(agent.org_id, conversationId);
    if (conversation === undefined || conversation.agent_id !== agent.id || !visitorTokenMatches(conversation, visitorToken, publicKey)) {
      throw new AppError('not_found', 'No such conversation for this visitor token.');
    }
    return { agent, conversation };
  }

  /**
   * The conversation a listen-only socket asks for (API.md "WebSockets": 4401 for an unknown visitor
   * token, 4404 for a valid token of another conversation). Throws AppError `not_found` (unknown key; or a
   * token that is valid, through this key, for another conversation), `missing_credentials` (no token) or
   * `invalid_token` (a token that opens no conversation through this key: unknown, or ended by an unpublish).
   */
  async listenedConversation(publicKey: string, conversationId: string, visitorToken: string | undefined): Promise<VisitorConversation> {
    try {
      return await this.conversation(publicKey, conversationId, visitorToken);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'not_found' || visitorToken === undefined) throw err;
      await this.agent(publicKey); // an unknown key stays 404
      const owner = isOpaqueToken(visitorToken, 'vt') ? await this.store.conversations.findByVisitorTokenHash(hashOpaqueToken(visitorToken)) : undefined;
      if (owner !== undefined && visitorTokenMatches(owner, visitorToken, publicKey)) throw err;
      throw new AppError('invalid_token', 'The visitor token is not valid (unknown, or its agent was unpublished since).');
    }
  }

  /**
   * A visitor's message to the agent of `publicKey` (the same contract as the authenticated chat): a new
   * conversation when `input.conversation_id` is absent (its visitor token comes in the first event), else
   * the continuation of the visitor's conversation (`input.visitor_token` required). Throws what
   * ChatService.send throws, and `not_found` for the key.
   */
  async send(publicKey: string, input: ChatInput, options?: Pick<TurnOptions, 'arrivedAt'>): Promise<TurnChannel> {
    const agent = await this.agent(publicKey);
    if (input.conversation_id !== undefined && (input.visitor_token === undefined || input.visitor_token === '')) {
      throw new AppError('missing_credentials', 'Send visitor_token with conversation_id: it came in the first event of the conversation.');
    }
    return this.chat.send(agent.org_id, agent.id, input, { publicKey }, options);
  }

  /** The visitor's conversation messages, in order. Throws like `conversation`. */
  async messages(publicKey: string, conversationId: string, visitorToken: string | undefined, page: PageRequest): Promise<Page<MessageRecord>> {
    const { agent, conversation } = await this.conversation(publicKey, conversationId, visitorToken);
    return this.store.conversations.listMessages(agent.org_id, conversation.id, page);
  }

  /** The visitor asks for a person (`requested_by: visitor`). Throws like `conversation`, and `conversation_closed`. */
  async requestHandoff(publicKey: string, conversationId: string, visitorToken: string | undefined, reason: string | undefined): Promise<ConversationRecord> {
    const { agent, conversation } = await this.conversation(publicKey, conversationId, visitorToken);
    return this.chat.control.requestHandoff(agent.org_id, conversation.id, { by: 'visitor', reason });
  }

  /** A turn of the visitor's conversation, for resume. Throws like `conversation`, and `not_found` for the turn. */
  async replay(publicKey: string, conversationId: string, turnId: string, visitorToken: string | undefined): Promise<TurnChannel> {
    const { agent, conversation } = await this.conversation(publicKey, conversationId, visitorToken);
    return this.chat.replay(agent.org_id, conversation.id, turnId);
  }

  /**
   * A running or recently finished turn of a conversation of the visitor (a public socket's `resume`
   * frame names only the turn). Throws AppError `not_found` (key, turn, or a token that is not that
   * conversation's) or `missing_credentials`.
   */
  async turnChannel(publicKey: string, turnId: string, visitorToken: string | undefined): Promise<TurnChannel> {
    const agent = await this.agent(publicKey);
    const channel = await this.chat.turnChannel(agent.org_id, turnId);
    await this.conversation(publicKey, channel.conversationId, visitorToken);
    return channel;
  }

  /** Stops a turn of the visitor's conversation. Throws like `conversation`, and `not_found` for the turn. */
  async cancel(publicKey: string, conversationId: string, turnId: string, visitorToken: string | undefined): Promise<CancelOutcome> {
    const { agent, conversation } = await this.conversation(publicKey, conversationId, visitorToken);
    return this.chat.control.cancelTurn(agent.org_id, conversation.id, turnId);
  }
}

/**
 * True when a browser page of `origin` may use an agent that allows `allowed` (API.md "WebSockets"):
 * `*` allows every origin; otherwise the serialized origin (scheme://host[:port], RFC 6454 section 6.2)
 * must be listed exactly (compared case-insensitively). A request with no Origin is not from a page: allowed.
 */
export function originAllowed(allowed: readonly string[], origin: string | undefined): boolean {
  if (origin === undefined) return true;
  if (allowed.includes('*')) return true;
  const o = origin.toLowerCase();
  return allowed.some((a) => a.toLowerCase() === o);
}

function rateLimited(waitMs: number, what: string): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('rate_limited', `Too many requests from this ${what}; retry in ${seconds} s.`, { headers: { 'Retry-After': String(seconds) } });
}
