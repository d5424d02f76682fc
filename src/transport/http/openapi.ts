import { z, type ZodType } from 'zod';
import { ERROR_CATALOGUE } from '../../errors/catalogue.js';
import type { AccessRule } from '../../runtime/services/access.js';
import type { RouteDef } from './types.js';

type JsonSchema = Record<string, unknown>;

/**
 * The OpenAPI security requirements of an access rule (OpenAPI 3.1 section 4.8.30): alternatives, one
 * per credential kind; a person on an org-scoped route needs the access token and X-Org-Id together.
 */
export function securityOf(access: AccessRule): Array<Record<string, string[]>> {
  const alternatives: Array<Record<string, string[]>> = [];
  if (access.credentials.includes('api_key')) alternatives.push({ apiKey: [] });
  if (access.credentials.includes('person')) alternatives.push(access.roles === null ? { accessToken: [] } : { accessToken: [], orgId: [] });
  return alternatives;
}

/** The 400/401/403 responses that follow from an access rule, with the error codes each can carry. */
function accessResponses(access: AccessRule): Record<string, string> {
  if (access.credentials.length === 0) return {};
  const person = access.credentials.includes('person');
  const key = access.credentials.includes('api_key');
  const out: Record<string, string> = {};
  out['401'] = [
    'missing_credentials',
    'invalid_api_key (also: an API key in the URL), revoked_api_key',
    ...(person ? ['invalid_token (bad signature, algorithm, kid, iss, aud or typ; the person no longer exists)', 'expired_token'] : []),
  ].join('; ');
  if (person && access.roles !== null) out['400'] = 'missing_org_id: a person\'s access token needs X-Org-Id';
  const forbidden: string[] = [];
  if (!key) forbidden.push('forbidden: an API key cannot do this (a signed-in person only)');
  if (person && access.roles !== null) {
    forbidden.push('not_a_member: the person does not belong to the organization in X-Org-Id');
    if (access.roles.length < 3) forbidden.push(`forbidden: the person's role is not ${access.roles.join(' or ')}`);
  }
  if (forbidden.length) out['403'] = forbidden.join('; ');
  return out;
}

/**
 * Builds the OpenAPI 3.1 document of `routes` from the same zod schemas that validate requests
 * (JSON Schema 2020-12 dialect, which OpenAPI 3.1 uses). Schemas with a `meta({id})` become shared
 * components.
 */
export function buildOpenApi(routes: RouteDef[]): Record<string, unknown> {
  const uri = (id: string) => `#/components/schemas/${id}`;
  const clean = (schema: JsonSchema): JsonSchema => {
    const { $schema: _s, $id: _i, ...rest } = schema;
    return rest;
  };
  // Every schema with `meta({ id })` is a shared component. Request schemas are described as the
  // client sends them (io: input: defaults make fields optional); everything else as the server sends it.
  const requestIds = new Set<string>();
  for (const r of routes) {
    for (const s of [r.body, r.query]) {
      const id = s && s !== 'raw' ? (s.meta() as { id?: string } | undefined)?.id : undefined;
      if (id) requestIds.add(id);
    }
  }
  requestIds.add('DocumentCreate');
  const all = (io: 'input' | 'output') =>
    (z.toJSONSchema(z.globalRegistry, { io, uri, unrepresentable: 'any' }) as { schemas: Record<string, JsonSchema> }).schemas;
  const outputs = all('output');
  const inputs = all('input');
  const components: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(outputs)) components[id] = clean(requestIds.has(id) ? inputs[id]! : schema);

  const toSchema = (schema: ZodType, io: 'input' | 'output'): JsonSchema => {
    const id = (schema.meta() as { id?: string } | undefined)?.id;
    if (id && components[id]) return { $ref: uri(id) };
    // Nested schemas with an id come back under $defs: point them at the shared components instead.
    const { $defs: _defs, ...inline } = clean(z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema);
    return JSON.parse(JSON.stringify(inline).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method.toLowerCase()}${r.path.replace(/[{}]/g, '').split(/[/-]/).map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join('')}`,
      security: r.security ?? securityOf(r.access),
      'x-parley-access': { credentials: [...r.access.credentials], roles: r.access.roles === null ? null : [...r.access.roles] },
    };
    if (r.access.credentials.includes('person') && r.access.roles !== null) {
      op.description = `Credentials: ${r.access.credentials.map((c) => (c === 'api_key' ? 'an API key' : `a person's access token with X-Org-Id, role ${r.access.roles!.join(', ')}`)).join(', or ')}.`;
    }
    const params: unknown[] = [];
    for (const m of r.path.matchAll(/\{(\w+)\}/g)) params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
    for (const h of r.headerParams ?? []) params.push({ name: h.name, in: 'header', required: h.required, description: h.description, schema: { type: 'string' } });
    if (r.cors) {
      op['x-parley-cors'] = 'Preflights (OPTIONS) are answered; responses carry CORS headers for the origins the published agent allows (allowed_origins, ["*"] by default); another origin gets 403 origin_not_allowed.';
    }
    if (r.query) {
      const qs = toSchema(r.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(qs.properties ?? {})) {
        params.push({ name, in: 'query', required: (qs.required ?? []).includes(name), schema });
      }
    }
    if (params.length) op.parameters = params;
    if (r.body && r.body !== 'raw') {
      op.requestBody = { required: true, content: { 'application/json': { schema: toSchema(r.body, 'input') } } };
    } else if (r.body === 'raw') {
      op.requestBody = {
        required: true,
        content: {
          'text/plain': { schema: { type: 'string' } },
          'text/markdown': { schema: { type: 'string' } },
          'application/json': { schema: { $ref: '#/components/schemas/DocumentCreate' } },
        },
      };
    }
    const responses: Record<string, unknown> = {};
    for (const res of r.responses) {
      const key = String(res.status);
      const content = res.schema ? { [res.contentType ?? 'application/json']: { schema: toSchema(res.schema, 'output') } } : undefined;
      const prev = responses[key] as { description: string; content?: Record<string, unknown> } | undefined;
      if (prev) {
        prev.description += `; ${res.description}`;
        if (content) prev.content = { ...prev.content, ...content };
      } else {
        responses[key] = content ? { description: res.description, content } : { description: res.description };
      }
    }
    const error = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
    const add = (status: string, description: string) => {
      const prev = responses[status] as { description: string } | undefined;
      if (prev) prev.description += `; ${description}`;
      else responses[status] = { description, content: error };
    };
    for (const [status, description] of Object.entries(accessResponses(r.access))) add(status, description);
    if (r.body && r.body !== 'raw') {
      add('400', 'invalid_json, or validation_failed (also: nesting deeper than 64 levels, lone UTF-16 surrogates)');
      add('413', 'body_too_large');
      add('415', 'unsupported_content_type: a non-empty body needs Content-Type application/json');
    }
    op.responses = responses;
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
    if (r.method === 'GET') {
      // HEAD works wherever GET does (API.md "Conventions"): same status and headers, no body.
      const headResponses = Object.fromEntries(Object.entries(responses).map(([status, res]) => [status, { description: (res as { description: string }).description }]));
      paths[r.path]!.head = {
        ...op, summary: `${r.summary} (headers only)`, operationId: `head${(op.operationId as string).slice(3)}`, responses: headResponses,
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Parley API', version: '0.1.0',
      description: `Conversational agent service. Error codes: ${Object.keys(ERROR_CATALOGUE).join(', ')}.`,
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key: sk_ + 30 base62 + 6-char CRC32 checksum. Its organization is the key\'s; X-Org-Id is ignored.' },
        accessToken: {
          type: 'http', scheme: 'bearer', bearerFormat: 'JWT',
          description: 'A signed-in person\'s access token from POST /v1/auth/login or /v1/auth/refresh: EdDSA JWT, typ at+jwt (RFC 9068), 900 s.',
        },
        orgId: { type: 'apiKey', in: 'header', name: 'X-Org-Id', description: 'With an access token: the organization the request acts in (org_...); the person must be a member.' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'GET /metrics only, when the server sets PARLEY_METRICS_TOKEN: that token (compared in constant time).' },
      },
    },
  };
}
