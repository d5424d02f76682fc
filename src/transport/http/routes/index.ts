import { buildOpenApi } from '../openapi.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { agentRoutes } from './agents.js';
import { apiKeyRoutes } from './api-keys.js';
import { authRoutes } from './auth.js';
import { chatRoutes } from './chat.js';
import { handoffRoutes } from './handoff.js';
import { knowledgeRoutes } from './knowledge.js';
import { memberRoutes } from './members.js';
import { operationRoutes } from './operations.js';
import { organizationRoutes } from './organization.js';
import { publicRoutes } from './public.js';
import { usageRoutes, webhookRoutes } from './webhooks.js';
import { openAIRoutes } from './openai.js';

/**
 * Every HTTP route of the API, in matching order (literal paths before parameters where they overlap).
 * The route factories only capture `services` in their handlers: building the list calls none of them,
 * so {@link apiDocument} can build it with no server behind it.
 */
export function apiRoutes(services: Services): RouteDef[] {
  const routes: RouteDef[] = [];
  routes.push(
    ...operationRoutes(services, () => routes), ...authRoutes(services), ...apiKeyRoutes(services), ...memberRoutes(services),
    ...agentRoutes(services), ...knowledgeRoutes(services), ...chatRoutes(services), ...handoffRoutes(services), ...publicRoutes(services),
    ...openAIRoutes(services),
    ...webhookRoutes(services), ...usageRoutes(services), ...organizationRoutes(services),
  );
  return routes;
}

/**
 * The OpenAPI 3.1 document of the API (the body of `GET /v1/openapi.json`), built from the route
 * definitions alone: no store, no server. `npm run gen:api` turns it into `src/web/api-types.ts`.
 * Throws if building the routes touches a service (a factory that reads one at definition time).
 */
export function apiDocument(): Record<string, unknown> {
  const absent = new Proxy({}, {
    get(_target, name) {
      throw new Error(`building the route list read services.${String(name)}: route factories may use services only inside handlers`);
    },
  }) as Services;
  return buildOpenApi(apiRoutes(absent));
}
