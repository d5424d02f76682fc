/**
 * HTTP tools end to end (docs/agents-and-models.md "HTTP tools"): the real server, real SQLite, the mock
 * upstream model `mock-call-<tool>` calling an agent's HTTP tool, and the tool's endpoint a real
 * node:http server on loopback. Covers the agent validation, a successful call with a secret header,
 * schema-invalid arguments (nothing sent), a timeout, a 64 KiB response cap, and a private address
 * refused when private networks are not allowed; each run is in tool_runs and on the bus as `tool.run`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/events/event-bus.js';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';
import { readSse } from '../helpers/sse-client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const SECRET = 'tool-secret-value-5f2c9a';

interface Received { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }

/** The customer's endpoint: /weather answers JSON, /slow never answers, /big sends 200 KiB. */
async function startEndpoint(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString('utf8'); });
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const path = (req.url ?? '').split('?')[0];
      if (path === '/weather') {
        const city = req.method === 'GET' ? new URL(req.url ?? '', 'http://x').searchParams.get('city') : (JSON.parse(body) as { city: string }).city;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ city, forecast: 'light rain', celsius: 14 }));
      } else if (path === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('y'.repeat(200 * 1024));
      } else if (path === '/slow') {
        // Never answers; the tool's timeout must end the call.
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no such thing');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`, received,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const WEATHER_PARAMS = {
  type: 'object',
  properties: { city: { type: 'string', minLength: 1 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city'],
  additionalProperties: false,
};

function weatherTool(url: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'http', name: 'get_weather', description: 'Weather forecast for a city', url, method: 'POST',
    parameters: WEATHER_PARAMS, headers_from_env: { 'X-Api-Key': 'PARLEY_TOOL_SECRET_WEATHER' }, timeout_ms: 2000, ...over,
  };
}

async function createAgent(s: TestServer, tools: unknown[], model = 'mock-call-get_weather'): Promise<string> {
  const res = await s.api('/v1/agents', { body: { name: 'tools', model: { provider: 'openai', name: model }, tools } });
  const body = (await res.json()) as Json;
  if (res.status !== 201) throw new Error(`create agent: ${res.status} ${JSON.stringify(body)}`);
  return body.id as string;
}

async function chat(s: TestServer, agentId: string, message: string): Promise<Json> {
  const res = await s.api(`/v1/agents/${agentId}/chat`, { body: { message, stream: false } });
  const body = (await res.json()) as Json;
  expect(res.status).toBe(200);
  return body;
}

describe('HTTP tools', () => {
  let mock: MockUpstream;
  let endpoint: Awaited<ReturnType<typeof startEndpoint>>;
  let s: TestServer;
  const events: DomainEvent[] = [];

  beforeAll(async () => {
    mock = await startMockUpstream();
    endpoint = await startEndpoint();
    s = await startTestServer({
      PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_TOOLS_ALLOW_PRIVATE: 'true', PARLEY_TOOL_SECRET_WEATHER: SECRET,
    }, { captureLogs: true });
    s.parley.events.subscribe((e: DomainEvent) => { if (e.type === 'tool.run') events.push(e); });
  }, 60_000);

  afterAll(async () => {
    await s?.close();
    await endpoint?.close();
    await mock?.close();
  });

  it('validates tools on create and patch: schema that does not compile, non-object schema, bad URL, secret not under the prefix, duplicate names', async () => {
    const bad = async (tool: Record<string, unknown>, path: string) => {
      const res = await s.api('/v1/agents', { body: { name: 'x', tools: [tool] } });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(400);
      expect(body.error.code).toBe('validation_failed');
      expect(JSON.stringify(body.error.errors)).toContain(path);
      return body.error;
    };
    const e1 = await bad(weatherTool(`${endpoint.url}/weather`, { parameters: { type: 'object', properties: { city: { type: 'strin' } } } }), 'tools[0].parameters');
    expect(e1.message).toContain('not a valid JSON Schema');
    await bad(weatherTool(`${endpoint.url}/weather`, { parameters: { type: 'string' } }), 'tools[0].parameters');
    await bad(weatherTool('ftp://example.com/x'), 'tools[0].url');
    await bad(weatherTool('https://user:pw@example.com/x'), 'tools[0].url');
    await bad(weatherTool(`${endpoint.url}/weather`, { headers_from_env: { 'X-Api-Key': 'PARLEY_OPENAI_API_KEY' } }), 'headers_from_env');
    await bad(weatherTool(`${endpoint.url}/weather`, { name: 'search_knowledge' }), 'name');
    await bad(weatherTool(`${endpoint.url}/weather`, { timeout_ms: 10 }), 'timeout_ms');
    const dup = await s.api('/v1/agents', { body: { name: 'x', tools: [weatherTool(`${endpoint.url}/weather`), weatherTool(`${endpoint.url}/weather`)] } });
    expect(dup.status).toBe(400);

    const id = await createAgent(s, ['search_knowledge']);
    const patch = await s.api(`/v1/agents/${id}`, { method: 'PATCH', body: { tools: [weatherTool(`${endpoint.url}/weather`, { parameters: { type: 'object', required: 'city' } })] } });
    expect(patch.status).toBe(400);
    const ok = await s.api(`/v1/agents/${id}`, { method: 'PATCH', body: { tools: ['search_knowledge', weatherTool(`${endpoint.url}/weather`)] } });
    expect(ok.status).toBe(200);
    const agent = (await ok.json()) as Json;
    expect(agent.tools).toEqual(['search_knowledge', { ...weatherTool(`${endpoint.url}/weather`) }]);
  });

  it('is in the OpenAPI document, as an item of an agent\'s tools', async () => {
    const openapi = (await (await fetch(`${s.url}/v1/openapi.json`)).json()) as Json;
    const tool = openapi.components.schemas.HttpTool;
    expect(Object.keys(tool.properties).sort()).toEqual(['description', 'headers_from_env', 'method', 'name', 'parameters', 'timeout_ms', 'type', 'url']);
    expect(tool.properties.method.enum).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    expect(JSON.stringify(openapi.components.schemas.AgentCreate.properties.tools)).toContain('#/components/schemas/HttpTool');
  });

  it('a successful call: validated arguments as a JSON body, the secret header from the server, the answer handed back to the model, recorded and published', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/weather`)]);
    const before = endpoint.received.length;
    const body = await chat(s, agentId, '{"city":"Lyon","days":2}');
    expect(endpoint.received.length).toBe(before + 1);
    const req = endpoint.received.at(-1)!;
    expect(req).toMatchObject({ method: 'POST', url: '/weather', body: '{"city":"Lyon","days":2}' });
    expect(req.headers['x-api-key']).toBe(SECRET);
    expect(req.headers['content-type']).toBe('application/json');

    const output = { status: 200, content_type: 'application/json', body: { city: 'Lyon', forecast: 'light rain', celsius: 14 }, truncated: false };
    expect(body.tool_runs).toEqual([{ id: 'call_named_1', name: 'get_weather', arguments: { city: 'Lyon', days: 2 }, output, is_error: false }]);
    expect(body.content).toBe(`Tool result: ${JSON.stringify(output)}`);

    const runs = await s.parley.store.toolRuns.listForConversation(s.orgId, body.conversation_id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      agent_id: agentId, conversation_id: body.conversation_id, tool_call_id: 'call_named_1', name: 'get_weather',
      kind: 'http', status: 'succeeded', http_status: 200, error: null,
    });
    expect(runs[0]!.response_bytes).toBe(Buffer.byteLength(JSON.stringify(output.body)));
    const event = events.find((e) => (e.data as Json).tool_run_id === runs[0]!.id);
    expect(event).toMatchObject({ type: 'tool.run', org_id: s.orgId, data: { name: 'get_weather', is_error: false, status: 'succeeded', kind: 'http', http_status: 200 } });

    // The secret is never written to the log nor returned by the API.
    expect(JSON.stringify(s.logs())).not.toContain(SECRET);
    const messages = await s.api(`/v1/conversations/${body.conversation_id}/messages`, { method: 'GET' });
    expect(await messages.text()).not.toContain(SECRET);
  });

  it('GET sends the arguments as the query string', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/weather`, { method: 'GET' })]);
    const body = await chat(s, agentId, '{"city":"São Paulo"}');
    expect(endpoint.received.at(-1)).toMatchObject({ method: 'GET', url: '/weather?city=S%C3%A3o+Paulo', body: '' });
    expect(body.tool_runs[0].output.body.city).toBe('São Paulo');
  });

  it('a stream tells its client of a tool result only once the run is stored (a crash after the event loses nothing the client saw)', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/weather`)]);
    const toolRuns = s.parley.store.toolRuns;
    const record = toolRuns.record.bind(toolRuns);
    const stored: string[] = [];
    // The real SQLite store, watched and slowed: a run counts as stored once its commit resolved, which
    // takes 300 ms longer than usual, so a tool_result sent before the commit reaches the client first.
    toolRuns.record = async (...args: Parameters<typeof record>) => {
      await new Promise((r) => setTimeout(r, 300));
      await record(...args);
      stored.push(args[0].tool_call_id);
    };
    try {
      const storedAtResult: string[][] = [];
      const { events, response } = await readSse(`${s.url}/v1/agents/${agentId}/chat`, {
        method: 'POST', headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: '{"city":"Nantes"}', stream: true }),
      }, (e) => {
        if (e.data.type === 'tool_result') storedAtResult.push([...stored]);
      });
      expect(response.status).toBe(200);
      expect(events.map((e) => e.data.type).filter((t) => t.startsWith('tool_'))).toEqual(['tool_call', 'tool_result']);
      expect(storedAtResult).toEqual([['call_named_1']]);
      const conversationId = events[0]!.data.conversation_id as string;
      expect((await toolRuns.listForConversation(s.orgId, conversationId)).map((r) => r.tool_call_id)).toEqual(['call_named_1']);
    } finally {
      toolRuns.record = record;
    }
  });

  it('a tool run whose record cannot be stored: the stream still gets its tool_result and the turn still ends well', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/weather`)]);
    const toolRuns = s.parley.store.toolRuns;
    const record = toolRuns.record.bind(toolRuns);
    toolRuns.record = async () => { throw new Error('disk full'); };
    try {
      const { events } = await readSse(`${s.url}/v1/agents/${agentId}/chat`, {
        method: 'POST', headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: '{"city":"Brest"}', stream: true }),
      });
      const result = events.find((e) => e.data.type === 'tool_result');
      expect(result?.data.tool_result).toMatchObject({ tool_call_id: 'call_named_1', name: 'get_weather', is_error: false });
      expect(events.at(-1)!.data).toEqual({ type: 'done', finish_reason: 'stop' });
      expect(s.logs().some((l) => l.msg === 'could not record a tool run' && (l.err as { message?: string } | undefined)?.message === 'disk full')).toBe(true);
    } finally {
      toolRuns.record = record;
    }
  });

  it('schema-invalid arguments: nothing is sent, the model reads the error, the run is recorded as failed', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/weather`)]);
    const before = endpoint.received.length;
    const body = await chat(s, agentId, '{"city":"","days":9,"extra":true}');
    expect(endpoint.received.length).toBe(before);
    const run = body.tool_runs[0];
    expect(run.is_error).toBe(true);
    expect(run.output.error).toMatch(/^invalid arguments: /);
    expect(run.output.error).toContain('/city must NOT have fewer than 1 characters');
    expect(run.output.error).toContain('/days must be <= 7');
    expect(run.output.error).toContain('must NOT have additional properties');
    expect(body.content).toBe(`Tool result: ${JSON.stringify(run.output)}`);
    const [rec] = await s.parley.store.toolRuns.listForConversation(s.orgId, body.conversation_id);
    expect(rec).toMatchObject({ status: 'failed', http_status: null, response_bytes: 0 });
    expect(rec!.error).toBe(run.output.error);
    expect(events.find((e) => (e.data as Json).tool_run_id === rec!.id)).toMatchObject({ data: { is_error: true, status: 'failed' } });

    const notJson = await chat(s, agentId, 'Lyon please');
    expect(notJson.tool_runs[0].output).toEqual({ error: 'invalid arguments: not valid JSON' });
  });

  it('a call past timeout_ms fails with a timeout the model reads', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/slow`, { timeout_ms: 300 })]);
    const body = await chat(s, agentId, '{"city":"Oslo"}');
    expect(endpoint.received.at(-1)).toMatchObject({ url: '/slow' });
    expect(body.tool_runs[0]).toMatchObject({ is_error: true, output: { error: 'the endpoint did not answer within 300 ms' } });
    const [rec] = await s.parley.store.toolRuns.listForConversation(s.orgId, body.conversation_id);
    expect(rec).toMatchObject({ status: 'failed', http_status: null, error: 'the endpoint did not answer within 300 ms' });
    expect(rec!.duration_ms).toBeGreaterThanOrEqual(300);
  });

  it('caps the response handed to the model at 64 KiB, and a non-2xx answer is an error with what the endpoint said', async () => {
    const big = await chat(s, await createAgent(s, [weatherTool(`${endpoint.url}/big`)]), '{"city":"Rome"}');
    const out = big.tool_runs[0].output;
    expect(out).toMatchObject({ status: 200, truncated: true });
    expect(out.body).toBe('y'.repeat(64 * 1024));
    const missing = await chat(s, await createAgent(s, [weatherTool(`${endpoint.url}/nope`)]), '{"city":"Rome"}');
    expect(missing.tool_runs[0]).toMatchObject({ is_error: true, output: { status: 404, body: 'no such thing', truncated: false } });
    const [rec] = await s.parley.store.toolRuns.listForConversation(s.orgId, missing.conversation_id);
    expect(rec).toMatchObject({ status: 'failed', http_status: 404, error: 'the endpoint answered 404' });
  });

  it('a header secret that the server does not have fails the call without sending it', async () => {
    const agentId = await createAgent(s, [weatherTool(`${endpoint.url}/weather`, { headers_from_env: { Authorization: 'PARLEY_TOOL_SECRET_MISSING' } })]);
    const before = endpoint.received.length;
    const body = await chat(s, agentId, '{"city":"Lyon"}');
    expect(endpoint.received.length).toBe(before);
    expect(body.tool_runs[0].output).toEqual({ error: 'the server variable PARLEY_TOOL_SECRET_MISSING for header Authorization is not set' });
  });
});

describe('HTTP tools: private networks refused unless allowed', () => {
  let mock: MockUpstream;
  let endpoint: Awaited<ReturnType<typeof startEndpoint>>;
  let s: TestServer;

  beforeAll(async () => {
    mock = await startMockUpstream();
    endpoint = await startEndpoint();
    s = await startTestServer({ PARLEY_OPENAI_BASE_URL: mock.url, PARLEY_TOOL_SECRET_WEATHER: SECRET });
  }, 60_000);

  afterAll(async () => {
    await s?.close();
    await endpoint?.close();
    await mock?.close();
  });

  it('refuses a loopback IP literal or localhost when the agent is saved', async () => {
    for (const url of [`${endpoint.url}/weather`, 'http://localhost:9/x', 'http://[::1]:9/x', 'http://169.254.169.254/latest']) {
      const res = await s.api('/v1/agents', { body: { name: 'x', tools: [weatherTool(url)] } });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(400);
      expect(body.error.errors).toEqual([{ path: 'tools[0].url', message: 'points to a private, loopback or reserved address' }]);
    }
  });

  it('refuses at call time an agent whose tool was saved while private networks were allowed; nothing reaches the endpoint', async () => {
    // Saved directly in the store, as a server with PARLEY_TOOLS_ALLOW_PRIVATE=true would have kept it:
    // the guard checks the address on every connection, whatever was allowed when the tool was saved.
    const created = await s.api('/v1/agents', { body: { name: 'x', model: { provider: 'openai', name: 'mock-call-get_weather' }, tools: [] } });
    const agentId = ((await created.json()) as Json).id as string;
    await s.parley.store.agents.update(s.orgId, agentId, { tools: [weatherTool(`${endpoint.url}/weather`) as never] }, new Date().toISOString());
    const before = endpoint.received.length;
    const body = await chat(s, agentId, '{"city":"Lyon"}');
    expect(endpoint.received.length).toBe(before);
    expect(body.tool_runs[0].is_error).toBe(true);
    // The tenant (and, through the model, the visitor) never learns an address (security review, finding 9).
    expect(body.tool_runs[0].output.error).toBe('destination refused: private address');
    const [rec] = await s.parley.store.toolRuns.listForConversation(s.orgId, body.conversation_id);
    expect(rec).toMatchObject({ kind: 'http', status: 'failed', http_status: null });
  });
});
