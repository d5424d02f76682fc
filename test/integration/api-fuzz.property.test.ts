/**
 * Every operation of the published contract (GET /v1/openapi.json) against random requests built from
 * its own schemas (fast-check, fixed seed): path ids that exist, belong to another organization or are
 * junk; query values that fit or do not; bodies that are valid, nearly valid (a field missing, of the
 * wrong type, out of range, unknown) or not JSON at all; with or without a key. Each answer must be a
 * success or a typed error of API.md "Errors" whose code is in the catalogue, never a 5xx, and the server
 * must keep serving (Standards: bad input gets a clear typed error and never crashes the process).
 * `FUZZ_SEED=<n> FUZZ_RUNS=<n>` explore other requests than CI's fixed ones.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../src/errors/catalogue.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

type Schema = Record<string, unknown>;
interface Operation { path: string; method: string; op: Schema }

let srv: TestServer;
let spec: { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema> } };
/** Ids that exist in the seeded organization, by path parameter name. */
const known: Record<string, string> = {};
/** Ids of another organization, by path parameter name. */
const foreign: Record<string, string> = {};

const json = async (res: Response) => JSON.parse(await res.text()) as Record<string, string>;

beforeAll(async () => {
  srv = await startTestServer();
  spec = await (await fetch(`${srv.url}/v1/openapi.json`)).json() as typeof spec;
  const kb = await json(await srv.api('/v1/knowledge-bases', { body: { name: 'fuzz kb' } }));
  const agent = await json(await srv.api('/v1/agents', { body: { name: 'fuzz agent', knowledge_base_ids: [kb.id] } }));
  const published = await json(await srv.api(`/v1/agents/${agent.id}/publish`, { method: 'POST' }));
  const chat = await json(await srv.api(`/v1/agents/${agent.id}/chat`, { body: { message: 'hello' } }));
  const doc = await json(await srv.api(`/v1/knowledge-bases/${kb.id}/documents`, { body: { title: 'Doc', content: 'Parley answers questions.' } }));
  const messages = await (await srv.api(`/v1/conversations/${chat.conversation_id}/messages`)).json() as { data: Array<{ turn_id: string | null }> };
  Object.assign(known, {
    agent_id: agent.id, kb_id: kb.id, doc_id: doc.id, public_key: published.public_key,
    conversation_id: chat.conversation_id, turn_id: messages.data.find((m) => m.turn_id !== null)?.turn_id,
  });
  const other = await srv.addOrganization('other');
  const otherAgent = await json(await srv.api('/v1/agents', { body: { name: 'theirs' }, key: other.apiKey }));
  const otherKb = await json(await srv.api('/v1/knowledge-bases', { body: { name: 'theirs' }, key: other.apiKey }));
  Object.assign(foreign, { agent_id: otherAgent.id, kb_id: otherKb.id, key_id: other.keyId });
  for (const [name, id] of Object.entries({ ...known, ...foreign })) expect(id, name).toMatch(/^[a-z]+_[0-9A-Za-z_-]+$/);
});
afterAll(async () => { await srv?.close(); });

function resolve(s: Schema | undefined): Schema {
  let out = s ?? {};
  while (typeof out.$ref === 'string') out = spec.components.schemas[out.$ref.split('/').at(-1)!] ?? {};
  return out;
}

/** Values of the wrong kind for almost any field. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.double(), fc.string({ maxLength: 40 }),
  fc.constant({}), fc.constant([]), fc.constant('\u0000'), fc.constant('\ud800'), fc.constant('x'.repeat(70_000)),
  fc.constant(-1), fc.constant(2 ** 53 + 2), fc.constant(1e308),
);

/** Values for `schema`: mostly valid, sometimes junk; nested objects drop and add keys at random. */
function valueOf(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (depth > 4) return junk;
  let valid: fc.Arbitrary<unknown>;
  const variants = (s.anyOf ?? s.oneOf ?? s.allOf) as Schema[] | undefined;
  const type = s.type as string | string[] | undefined;
  if (s.const !== undefined) valid = fc.constant(s.const);
  else if (Array.isArray(s.enum)) valid = fc.constantFrom(...(s.enum as unknown[]));
  else if (variants) valid = fc.oneof(...variants.map((v) => valueOf(v, depth + 1)));
  else if (Array.isArray(type)) valid = fc.oneof(...type.map((t) => valueOf({ ...s, type: t }, depth)));
  else if (type === 'object' || s.properties) {
    const props = Object.fromEntries(Object.entries((s.properties ?? {}) as Record<string, Schema>).map(([k, v]) => [k, valueOf(v, depth + 1)]));
    valid = fc.tuple(fc.record(props, { requiredKeys: [] }), fc.option(fc.tuple(fc.string({ maxLength: 12 }), junk), { freq: 5 }))
      .map(([o, extra]) => (extra ? { ...o, [extra[0]]: extra[1] } : o));
  } else if (type === 'array') {
    valid = fc.array(valueOf(s.items as Schema, depth + 1), { maxLength: Math.min(4, Number(s.maxItems ?? 4)) });
  } else if (type === 'string') {
    const ids = Object.values(known);
    valid = fc.oneof(
      typeof s.pattern === 'string' ? fc.stringMatching(new RegExp(s.pattern)) : fc.string({ minLength: Number(s.minLength ?? 0), maxLength: Math.min(Number(s.maxLength ?? 60), 60) }),
      fc.constantFrom(...ids, 'https://example.com/hook', 'a@example.com', '2026-01-01T00:00:00Z'),
    );
  } else if (type === 'integer' || type === 'number') {
    const min = typeof s.minimum === 'number' ? s.minimum : -5;
    const max = typeof s.maximum === 'number' ? s.maximum : 1_000_000;
    valid = fc.oneof(fc.integer({ min: Math.ceil(min), max: Math.floor(Math.min(max, 2 ** 31 - 1)) }), fc.constantFrom(min - 1, max + 1));
  } else if (type === 'boolean') valid = fc.boolean();
  else if (type === 'null') valid = fc.constant(null);
  else valid = junk;
  return fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: junk, weight: 1 });
}

/** A path parameter: an id that exists, one of another organization, or junk. */
function idFor(name: string): fc.Arbitrary<string> {
  const choices = [known[name], foreign[name]].filter((x): x is string => x !== undefined);
  return fc.oneof(
    { arbitrary: choices.length > 0 ? fc.constantFrom(...choices) : fc.constant('zz_1'), weight: 4 },
    { arbitrary: fc.constantFrom('x', '%2e%2e', '..', 'a'.repeat(300), 'kb_', 'conv_0', '%00', '%F0%9F%92%A5'), weight: 1 },
  );
}

interface Request { method: string; url: string; headers: Record<string, string>; body?: string }

function requestFor({ path, method, op }: Operation): fc.Arbitrary<Request> {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const query = ((op.parameters ?? []) as Schema[]).filter((p) => p.in === 'query');
  const content = (op.requestBody as Schema | undefined)?.content as Record<string, Schema> | undefined;
  const jsonSchema = content?.['application/json']?.schema as Schema | undefined;
  const bodyArb: fc.Arbitrary<string | undefined> = content === undefined
    ? fc.constant(undefined)
    : fc.oneof(
      { arbitrary: valueOf(jsonSchema).map((v) => JSON.stringify(v) ?? 'null'), weight: 8 },
      { arbitrary: fc.constantFrom('{', '[]', '"x"', '{"a":1}{', '\u0000', '', 'not json'), weight: 1 },
    );
  return fc.record({
    ids: fc.tuple(...names.map(idFor)),
    // A query value is cut to 1,000 bytes: the whole header section must stay under 4 KiB (docs/errors.md).
    query: fc.tuple(...query.map((q) => fc.option(valueOf(q.schema as Schema).map((v) => `${String(q.name)}=${encodeURIComponent(typeof v === 'string' ? v.replace(/[\ud800-\udfff]/g, '') : JSON.stringify(v) ?? '').slice(0, 1000).replace(/%[0-9A-F]?$/, '')}`), { freq: 2 }))),
    body: bodyArb,
    auth: fc.constantFrom('key', 'key', 'key', 'key', 'none', 'junk', 'foreign'),
    type: fc.constantFrom('application/json', 'application/json', 'application/json', 'text/plain', 'application/json; charset=utf-16'),
  }).map(({ ids, query: q, body, auth, type }) => {
    let i = 0;
    const url = path.replace(/\{[^}]+\}/g, () => ids[i++]!) + (q.some((x) => x) ? `?${q.filter((x) => x).join('&')}` : '');
    const headers: Record<string, string> = {};
    if (auth === 'key') headers.authorization = `Bearer ${srv.apiKey}`;
    if (auth === 'junk') headers.authorization = 'Bearer sk_live_notakey';
    if (auth === 'foreign') headers.authorization = 'Basic Zm9vOmJhcg==';
    if (body !== undefined) headers['content-type'] = type;
    return { method: method.toUpperCase(), url, headers, ...(body !== undefined ? { body } : {}) };
  });
}

const CODES = new Set(Object.keys(ERROR_CATALOGUE));
const ERROR_FIELDS = new Set(['type', 'code', 'message', 'request_id', 'errors']);

/** Why `res` breaks the error contract, or undefined when it keeps it. */
async function contractBreach(req: Request, res: Response): Promise<string | undefined> {
  const text = await res.text();
  const what = `${req.method} ${req.url.slice(0, 160)} -> ${res.status}: ${text.slice(0, 300)}`;
  if (res.status >= 500) return `server error: ${what}`;
  if (res.status < 400) return undefined;
  if (!(res.headers.get('content-type') ?? '').startsWith('application/json')) return `error without JSON: ${what}`;
  let body: { error?: Record<string, unknown> };
  try { body = JSON.parse(text) as typeof body; } catch { return `error body is not JSON: ${what}`; }
  const e = body.error;
  if (!e || Object.keys(body).length !== 1) return `error body is not {error}: ${what}`;
  if (typeof e.code !== 'string' || !CODES.has(e.code)) return `error code not in the catalogue: ${what}`;
  if (e.type !== ERROR_CATALOGUE[e.code as keyof typeof ERROR_CATALOGUE].type) return `error type does not match its code: ${what}`;
  if (typeof e.message !== 'string' || e.message.length === 0) return `error without a message: ${what}`;
  if (e.request_id !== res.headers.get('x-request-id')) return `error request_id is not the X-Request-Id header: ${what}`;
  for (const k of Object.keys(e)) if (!ERROR_FIELDS.has(k)) return `unexpected error field ${k}: ${what}`;
  return undefined;
}

describe('API fuzz: every operation of /v1/openapi.json', () => {
  it('answers random requests built from the contract with a success or a typed error, never a 5xx, and keeps serving', async () => {
    const operations: Operation[] = [];
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(item)) if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) operations.push({ path, method, op });
    }
    // The contract is really read: every resource the API names is in it.
    expect(operations.length).toBeGreaterThanOrEqual(60);
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...operations).chain(requestFor), async (req) => {
        const res = await fetch(`${srv.url}${req.url}`, {
          method: req.method, headers: req.headers, ...(req.body !== undefined ? { body: req.body } : {}),
          signal: AbortSignal.timeout(10_000),
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const breach = await contractBreach(req, res);
        expect(breach).toBeUndefined();
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 600), seed: Number(process.env.FUZZ_SEED ?? 20261128), endOnFailure: true },
    );
    // The requests reached the handlers (successes and validation errors), not only the auth check.
    const count = (test: (s: number) => boolean) => [...statuses].filter(([s]) => test(s)).reduce((a, [, n]) => a + n, 0);
    expect(count((s) => s >= 200 && s < 300)).toBeGreaterThan(30);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(30);
    expect(statuses.get(401) ?? 0).toBeGreaterThan(10);
    expect(statuses.get(404) ?? 0).toBeGreaterThan(10);
    // And the server still serves a real conversation.
    expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);
    const agent = await json(await srv.api('/v1/agents', { body: { name: 'after the fuzz' } }));
    const chat = await srv.api(`/v1/agents/${agent.id}/chat`, { body: { message: 'still there?' } });
    expect(chat.status).toBe(200);
    expect((await json(chat)).conversation_id).toMatch(/^conv_/);
  }, 120_000);
});
