import type { z } from 'zod';
import { ACCESS } from '../../../runtime/services/access.js';
import { ApiKeyCreateSchema, ApiKeyRotateSchema, ApiKeySchema, ApiKeyWithSecretSchema, EmptyQuery, ErrorSchema, listOf, PageQuery } from '../schemas.js';
import type { Services } from '../services.js';
import type { RouteDef } from '../types.js';
import { apiKeyView, issuedApiKeyView, pageView } from '../views.js';
import { NO_STORE } from './auth.js';

/**
 * `/v1/api-keys` (API.md "Auth endpoints"): the dashboard's key management, for a person who is an owner
 * or admin of the organization in X-Org-Id; an API key cannot manage keys (403 forbidden).
 */
export function apiKeyRoutes(s: Services): RouteDef[] {
  return [
    {
      method: 'GET', path: '/v1/api-keys', tag: 'API keys', access: ACCESS.personManage, query: PageQuery,
      summary: 'List the organization\'s API keys, newest first, revoked ones included (never a secret)',
      responses: [{ status: 200, description: 'API keys', schema: listOf(ApiKeySchema, 'ApiKeyList') }],
      async handle({ principal, query }) {
        return { kind: 'json', status: 200, body: pageView(await s.apiKeys.list(principal.orgId, query), apiKeyView) };
      },
    },
    {
      method: 'POST', path: '/v1/api-keys', tag: 'API keys', access: ACCESS.personManage, body: ApiKeyCreateSchema, query: EmptyQuery,
      summary: 'Create an API key; its secret is in this response only',
      responses: [{ status: 201, description: 'The key with its secret', schema: ApiKeyWithSecretSchema }],
      async handle({ principal, body }: { principal: { orgId: string }; body: z.infer<typeof ApiKeyCreateSchema> }) {
        return { kind: 'json', status: 201, body: issuedApiKeyView(await s.apiKeys.create(principal.orgId, body.name)), headers: NO_STORE };
      },
    },
    {
      method: 'POST', path: '/v1/api-keys/{key_id}/rotate', tag: 'API keys', access: ACCESS.personManage, body: ApiKeyRotateSchema, query: EmptyQuery,
      summary: 'Replace a key by a new one with the same name (the body is optional); the old secret works for grace_period_seconds (default 0), then gets 401 revoked_api_key',
      responses: [
        { status: 201, description: 'The new key with its secret', schema: ApiKeyWithSecretSchema },
        { status: 404, description: 'No usable key with this id (unknown, revoked or expired)', schema: ErrorSchema },
      ],
      async handle({ principal, params, body }: { principal: { orgId: string }; params: Record<string, string>; body: z.infer<typeof ApiKeyRotateSchema> }) {
        const issued = await s.apiKeys.rotate(principal.orgId, params.key_id!, body.grace_period_seconds);
        return { kind: 'json', status: 201, body: issuedApiKeyView(issued), headers: NO_STORE };
      },
    },
    {
      method: 'DELETE', path: '/v1/api-keys/{key_id}', tag: 'API keys', access: ACCESS.personManage, query: EmptyQuery,
      summary: 'Revoke a key at once: its next request gets 401 revoked_api_key',
      responses: [{ status: 204, description: 'Revoked' }, { status: 404, description: 'No such key, or already revoked', schema: ErrorSchema }],
      async handle({ principal, params }) {
        await s.apiKeys.revoke(principal.orgId, params.key_id!);
        return { kind: 'empty', status: 204 };
      },
    },
  ];
}
