import type { Config } from '../../config/config.js';
import type { Logger } from '../../log/logger.js';
import type { ChatService } from '../../runtime/chat-service.js';
import type { AccessService } from '../../runtime/services/access.js';
import type { AgentService } from '../../runtime/services/agents.js';
import type { ApiKeyService } from '../../runtime/services/api-keys.js';
import type { MemberService } from '../../runtime/services/members.js';
import type { SessionService } from '../../runtime/services/sessions.js';
import type { ConversationService } from '../../runtime/services/conversations.js';
import type { HealthService } from '../../runtime/services/health.js';
import type { KnowledgeBaseService } from '../../runtime/services/knowledge-bases.js';
import type { PublicService } from '../../runtime/services/public.js';
import type { UsageService } from '../../runtime/services/usage.js';
import type { WebhookService } from '../../runtime/services/webhooks.js';
import type { OrganizationService } from '../../runtime/services/organization.js';
import type { RetentionSweep } from '../../runtime/retention/retention-sweep.js';

/**
 * What route handlers may call: the runtime's services (DESIGN.md layers: transport -> runtime), never
 * the store or the domain modules below the runtime.
 */
export interface Services {
  config: Readonly<Config>;
  logger: Logger;
  access: AccessService;
  sessions: SessionService;
  apiKeys: ApiKeyService;
  members: MemberService;
  agents: AgentService;
  knowledgeBases: KnowledgeBaseService;
  conversations: ConversationService;
  chat: ChatService;
  /** Published agents: public keys, visitor tokens, allowed origins, rate limits. */
  public: PublicService;
  health: HealthService;
  /** Webhook endpoints, deliveries, test, retry, recover. */
  webhooks: WebhookService;
  /** Token usage and thresholds. */
  usage: UsageService;
  /** The caller's organization and its retention setting. */
  organization: OrganizationService;
  /** The retention sweep (tests run it at once). */
  retention: RetentionSweep;
  /** Prometheus text exposition of the metrics registry. */
  /** `GET /metrics`: the whole group's metrics (this process's and its neighbours', by `process` label). */
  metricsText(): Promise<string>;
  /** This process's metrics as JSON (the internal route a neighbour's `/metrics` reads). */
  metricsJson(): Promise<unknown>;
}
