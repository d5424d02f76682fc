/**
 * The WebSocket endpoints (API.md "WebSockets"): how each upgrade is authorized and which handler then
 * serves the socket. A refusal is told in the way the client can read it: a browser cannot see the status
 * of a refused upgrade (RFC 6455 section 4.1: it only fails the connection), so credential and
 * not-found failures complete the upgrade and close at once with 4401, 4403 or 4404 and the error code as
 * the reason; a page whose Origin the published agent does not allow gets no socket at all (HTTP 403
 * `origin_not_allowed`: the socket is never opened for it), and a client past the rate limit an HTTP 429
 * with `Retry-After`.
 */
import { AppError } from '../../errors/app-error.js';
import { apiKeyKey, conversationKey, memberKey, publicKeyKey, sessionKey, userKey } from '../../runtime/live/live-hub.js';
import type { Principal } from '../../runtime/services/access.js';
import { originAllowed } from '../../runtime/services/public.js';
import type { Services } from '../http/services.js';
import { CLOSE, closeFor, type SocketSession } from './socket.js';
import { ChatSession, InboxSession, ListenSession, OperatorSession, type SocketAccess, type SocketServices } from './sessions.js';

/** The upgrade request, copied out of the server's request object. */
export interface UpgradeRequest {
  /** Path parameters, percent-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** Lower-cased names. */
  headers: Record<string, string>;
  remoteAddress: string;
}

/** What to do with an upgrade. */
export type UpgradeOutcome =
  /** Upgrade, and serve the socket with `session`. */
  | { kind: 'open'; session: SocketSession }
  /** Upgrade, then close at once with `code` and `reason` (what browsers can read). */
  | { kind: 'close'; code: number; reason: string }
  /** Answer the upgrade request with this error (HTTP status and body); no socket. */
  | { kind: 'refuse'; error: AppError };

/** One WebSocket endpoint. `path` is a template like the HTTP routes' (`/v1/agents/{agent_id}/chat/ws`). */
export interface SocketRouteDef {
  path: string;
  summary: string;
  accept(req: UpgradeRequest): Promise<UpgradeOutcome>;
}

/**
 * What a socket opened by `principal` watches (API.md "Auth endpoints"): a person's socket closes when their
 * sign-in ends (logout, reuse, password change), when they are deleted, and when their membership of the
 * socket's organization changes; an API key's when the key is revoked or its grace period ends.
 */
function accessOf(principal: Principal): SocketAccess {
  if (principal.kind === 'api_key') return { keys: [apiKeyKey(principal.credentialId)], endsAt: principal.expiresAt ?? null };
  const keys = [userKey(principal.userId), memberKey(principal.orgId, principal.userId)];
  if (principal.sessionId !== null) keys.push(sessionKey(principal.sessionId));
  return { keys, role: principal.role };
}

/** A published agent's sockets close when its public key stops working (unpublished, republished, deleted). */
const UNPUBLISHED = (publicKey: string): SocketAccess => ({ keys: [publicKeyKey(publicKey)] });

/** Runs `accept`, turning a thrown error into an immediate close (or an HTTP answer for Origin and rate limits). */
function guarded(accept: (req: UpgradeRequest) => Promise<UpgradeOutcome>): (req: UpgradeRequest) => Promise<UpgradeOutcome> {
  return async (req) => {
    try {
      return await accept(req);
    } catch (err) {
      if (err instanceof AppError && (err.code === 'origin_not_allowed' || err.code === 'rate_limited')) return { kind: 'refuse', error: err };
      return { kind: 'close', ...closeFor(err) };
    }
  };
}

/** The public checks of a published agent's socket: the key (404), the page's Origin (403), the client's rate (429). */
async function publicAgent(s: Services, req: UpgradeRequest) {
  const agent = await s.public.agent(req.params.public_key!);
  if (!originAllowed(agent.allowed_origins, req.headers.origin)) {
    throw new AppError('origin_not_allowed', 'This page\'s origin may not use this agent; add it to the agent\'s allowed_origins.');
  }
  s.public.limit(req.remoteAddress);
  return agent;
}

/** The socket endpoints, served with `socket` (the handlers' services). */
export function socketRoutes(s: Services, socket: SocketServices): SocketRouteDef[] {
  return [
    {
      path: '/v1/agents/{agent_id}/chat/ws',
      summary: 'Chat with an agent over a WebSocket (?token= access token or wst_ ticket; or Authorization: Bearer sk_... on the upgrade)',
      accept: guarded(async (req) => {
        const agentId = req.params.agent_id!;
        const principal = await s.access.authenticateSocket(req.headers, req.query, () => s.agents.orgOf(agentId));
        await s.agents.get(principal.orgId, agentId);
        return { kind: 'open', session: new ChatSession(socket, { kind: 'api', orgId: principal.orgId, agentId }, accessOf(principal)) };
      }),
    },
    {
      path: '/v1/public/agents/{public_key}/ws',
      summary: 'A visitor chats with a published agent (visitor_token on message frames that continue a conversation)',
      accept: guarded(async (req) => {
        const agent = await publicAgent(s, req);
        const publicKey = req.params.public_key!;
        return { kind: 'open', session: new ChatSession(socket, { kind: 'public', publicKey, agent }, UNPUBLISHED(publicKey)) };
      }),
    },
    {
      path: '/v1/public/agents/{public_key}/conversations/{conversation_id}/ws',
      summary: 'Listen-only: an auth frame with the visitor token within 5 s, then catch-up, and live the visitor\'s own messages, operator pushes and agent turns',
      accept: guarded(async (req) => {
        await publicAgent(s, req);
        const publicKey = req.params.public_key!;
        const conversationId = req.params.conversation_id!;
        return { kind: 'open', session: new ListenSession(socket, publicKey, conversationId, { keys: [publicKeyKey(publicKey), conversationKey(conversationId)] }) };
      }),
    },
    {
      path: '/v1/conversations/{conversation_id}/ws',
      summary: "An operator's live view of a conversation (?after_message_id= to catch up first); may send message frames as the operator",
      accept: guarded(async (req) => {
        const conversationId = req.params.conversation_id!;
        const principal = await s.access.authenticateSocket(req.headers, req.query, () => s.conversations.orgOf(conversationId));
        await s.conversations.get(principal.orgId, conversationId);
        const after = req.query.get('after_message_id');
        if (after !== null && !/^msg_[0-9A-Za-z]{1,64}$/.test(after)) throw new AppError('validation_failed', 'after_message_id must be a msg_ id.');
        const catchUp = after === null ? undefined : { afterId: after };
        const access = accessOf(principal);
        return { kind: 'open', session: new OperatorSession(socket, principal.orgId, conversationId, catchUp, { ...access, keys: [...access.keys, conversationKey(conversationId)] }) };
      }),
    },
    {
      path: '/v1/inbox/ws',
      summary: 'Every conversation event of the organization (?org_id= with an access token)',
      accept: guarded(async (req) => {
        const named = req.query.get('org_id') ?? undefined;
        const principal = await s.access.authenticateSocket(req.headers, req.query, async () => {
          if (named === undefined) throw new AppError('missing_org_id', 'Send ?org_id=org_... with an access token.');
          return named;
        });
        if (named !== undefined && named !== principal.orgId) throw new AppError('forbidden', 'This credential belongs to another organization.');
        return { kind: 'open', session: new InboxSession(socket, principal.orgId, accessOf(principal)) };
      }),
    },
  ];
}
