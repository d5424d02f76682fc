import { z, type ZodType } from 'zod';
import { ERROR_CATALOGUE } from '../../errors/catalogue.js';
import type { RouteDef } from './types.js';

type JsonSchema = Record<string, unknown>;

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
      security: r.auth === 'none' ? [] : [{ apiKey: [] }],
    };
    const params: unknown[] = [];
    for (const m of r.path.matchAll(/\{(\w+)\}/g)) params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
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
    if (r.auth !== 'none') responses['401'] ??= { description: 'Missing, malformed, unknown or revoked API key', content: error };
    if (r.body && r.body !== 'raw') {
      responses['400'] ??= { description: 'invalid_json, or validation_failed (also: nesting deeper than 64 levels, lone UTF-16 surrogates)', content: error };
      responses['413'] ??= { description: 'body_too_large', content: error };
      responses['415'] ??= { description: 'unsupported_content_type: a non-empty body needs Content-Type application/json', content: error };
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
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'API key: sk_ + 30 base62 + 6-char CRC32 checksum' } },
    },
  };
}
