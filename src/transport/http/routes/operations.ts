import { ACCESS } from '../../../runtime/services/access.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { buildOpenApi } from '../openapi.js';
import { EmptyQuery, ErrorSchema } from '../schemas.js';

/**
 * Probes, metrics and the OpenAPI document (API.md "Operations"); no credential needed, except for the
 * metrics when PARLEY_METRICS_TOKEN is set (checked by the health service, in constant time).
 */
export function operationRoutes(s: Services, allRoutes: () => RouteDef[]): RouteDef[] {
  let openapi: unknown;
  return [
    {
      method: 'GET', path: '/healthz', tag: 'Operations', summary: 'Liveness: the process is up', access: ACCESS.public, query: EmptyQuery,
      responses: [{ status: 200, description: 'Up' }],
      handle: () => ({ kind: 'json', status: 200, body: { status: 'ok' } }),
    },
    {
      method: 'GET', path: '/readyz', tag: 'Operations', summary: 'Readiness: the store answers and the server is not draining', access: ACCESS.public, query: EmptyQuery,
      responses: [{ status: 200, description: 'Ready' }, { status: 503, description: 'Not ready' }],
      async handle() {
        const readiness = await s.health.readiness();
        return { kind: 'json', status: readiness.status === 'ready' ? 200 : 503, body: readiness };
      },
    },
    {
      method: 'GET', path: '/metrics', tag: 'Operations', access: ACCESS.public, query: EmptyQuery,
      summary: 'Prometheus metrics; when the server sets PARLEY_METRICS_TOKEN, with "Authorization: Bearer <that token>"',
      security: [{}, { metricsToken: [] }],
      responses: [
        { status: 200, description: 'Prometheus text format', contentType: 'text/plain' },
        { status: 401, description: 'PARLEY_METRICS_TOKEN is set: missing_credentials (no Authorization header) or invalid_token (another token); WWW-Authenticate: Bearer', schema: ErrorSchema },
      ],
      async handle({ req }) {
        s.health.checkMetricsAccess(req.headers.authorization);
        return { kind: 'text', status: 200, contentType: 'text/plain; version=0.0.4; charset=utf-8', body: await s.metricsText() };
      },
    },
    {
      method: 'GET', path: '/v1/openapi.json', tag: 'Operations', summary: 'This API as OpenAPI 3.1, generated from the validating schemas', access: ACCESS.public, query: EmptyQuery,
      responses: [{ status: 200, description: 'OpenAPI document' }],
      handle() {
        openapi ??= buildOpenApi(allRoutes());
        return { kind: 'json', status: 200, body: openapi };
      },
    },
  ];
}
