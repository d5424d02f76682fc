import type { Config } from '../../config/config.js';
import type { KnowledgeService } from '../../knowledge/knowledge-service.js';
import type { Logger } from '../../log/logger.js';
import type { ModelRegistry } from '../../models/registry.js';
import type { ChatService } from '../../runtime/chat-service.js';
import type { Store } from '../../store/ports.js';

/** What route handlers may call: the runtime's services, never the transport. */
export interface Services {
  config: Readonly<Config>;
  store: Store;
  chat: ChatService;
  knowledge: KnowledgeService;
  models: ModelRegistry;
  logger: Logger;
  /** Prometheus text exposition of the metrics registry. */
  metricsText(): Promise<string>;
}
