/**
 * The `openai` provider against the real mock upstream (node:http on port 0): streaming text, tool-call
 * accumulation, the wire format sent, upstream failures, idle timeout and caller abort.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { createOpenAIProvider, OneShotBody } from '../../src/models/openai/openai-model.js';
import { AppError } from '../../src/errors/app-error.js';
import type { ModelMessage, ModelPart, ModelTurnInput, Passage } from '../../src/models/port.js';
import { startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';

type Provider = ReturnType<typeof createOpenAIProvider>;

function turn(model: string, messages: ModelMessage[], extra: Partial<ModelTurnInput> = {}): ModelTurnInput {
  return { model, messages, passages: [], tools: [], ...extra };
}

async function collect(provider: Provider, input: ModelTurnInput, signal = new AbortController().signal): Promise<ModelPart[]> {
  const parts: ModelPart[] = [];
  await provider.stream(input, signal, (part) => parts.push(part));
  return parts;
}

/** Parts collected before the failure, and the failure itself. */
async function collectUntilError(
  provider: Provider,
  input: ModelTurnInput,
  signal = new AbortController().signal,
): Promise<{ parts: ModelPart[]; error: unknown }> {
  const parts: ModelPart[] = [];
  try {
    await provider.stream(input, signal, (part) => parts.push(part));
  } catch (error) {
    return { parts, error };
  }
  throw new Error(`expected the stream to fail, got ${JSON.stringify(parts)}`);
}

function textOf(parts: ModelPart[]): string {
  return parts.map((p) => (p.type === 'text-delta' ? p.delta : '')).join('');
}

const searchTool = {
  name: 'search_knowledge',
  description: 'Search the knowledge base.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

const passages: Passage[] = [
  { document_id: 'doc_1', chunk_id: 'chk_1', title: 'Guide', heading: 'Setup > Install', text: 'Run npm install.', score: 0.9 },
  { document_id: 'doc_2', chunk_id: 'chk_2', title: 'FAQ', heading: '', text: 'Resets take one hour.', score: 0.5 },
];

describe('openai provider against the mock upstream', () => {
  let mock: MockUpstream;
  let provider: Provider;
  let keyed: Provider;

  beforeAll(async () => {
    mock = await startMockUpstream();
    provider = createOpenAIProvider({ baseUrl: mock.url, timeoutMs: 5_000 });
    keyed = createOpenAIProvider({ baseUrl: mock.url, apiKey: 'sk-test-secret-123', timeoutMs: 5_000 });
  });

  afterAll(async () => {
    await provider.close();
    await keyed.close();
    await mock.close();
  });

  it('streams word deltas that concatenate to the answer, then usage and one finish', async () => {
    const parts = await collect(
      provider,
      turn('gpt-test', [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello world' },
      ]),
    );
    const deltas = parts.filter((p) => p.type === 'text-delta');
    expect(deltas.map((p) => p.delta)).toEqual(['You ', 'said: ', 'hello ', 'world']);
    expect(textOf(parts)).toBe('You said: hello world');
    // 'Be brief.' + 'hello world' = 20 characters -> 5 tokens; 4 deltas.
    expect(parts.slice(-2)).toEqual([
      { type: 'usage', usage: { input_tokens: 5, output_tokens: 4 } },
      { type: 'finish', reason: 'stop' },
    ]);
    expect(parts.filter((p) => p.type === 'finish')).toHaveLength(1);
  });

  it('reuses keep-alive connections: back-to-back steps do not open a connection each', async () => {
    mock.reset();
    for (let i = 0; i < 8; i++) await collect(provider, turn('gpt-test', [{ role: 'user', content: `step ${i}` }]));
    expect(mock.requests).toHaveLength(8);
    const ports = new Set(mock.requests.map((r) => r.remotePort));
    expect(ports.has(undefined)).toBe(false);
    // undici frees a socket just after its response ends, so a step started at once may take a second
    // pooled socket; it never opens a new connection per step.
    expect(ports.size).toBeLessThanOrEqual(2);
  });

  it('accumulates a tool call streamed in fragments, then answers from the tool message', async () => {
    const history: ModelMessage[] = [{ role: 'user', content: 'how do I reset my password?' }];
    const first = await collect(provider, turn('mock-tool', history, { tools: [searchTool] }));
    const calls = first.filter((p) => p.type === 'tool-call');
    expect(calls).toHaveLength(1);
    const call = calls[0]!.call;
    expect(call.id).toBe('call_1');
    expect(call.name).toBe('search_knowledge');
    expect(JSON.parse(call.arguments)).toEqual({ query: 'how do I reset my password?' });
    expect(first.some((p) => p.type === 'text-delta')).toBe(false);
    // id+name fragment plus at least 3 argument fragments.
    const usage = first.find((p) => p.type === 'usage');
    expect(usage?.type === 'usage' && usage.usage.output_tokens).toBeGreaterThanOrEqual(4);
    expect(first.at(-1)).toEqual({ type: 'finish', reason: 'tool_calls' });

    const toolResult = 'Passwords are reset from Settings > Security; the link expires after one hour, so hurry.';
    const second = await collect(
      provider,
      turn(
        'mock-tool',
        [
          ...history,
          { role: 'assistant', content: '', tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, name: call.name, content: toolResult },
        ],
        { tools: [searchTool] },
      ),
    );
    expect(textOf(second)).toBe(`Tool said: ${toolResult.slice(0, 60)}`);
    expect(second.filter((p) => p.type === 'tool-call')).toHaveLength(0);
    expect(second.at(-1)).toEqual({ type: 'finish', reason: 'stop' });
  });

  it('sends messages, tools, passages and max_tokens in the OpenAI format, with the bearer key', async () => {
    mock.reset();
    const parts = await collect(
      keyed,
      turn(
        'mock-history',
        [
          { role: 'system', content: 'You are Parley.' },
          { role: 'user', content: 'find it' },
          { role: 'assistant', content: '', tool_calls: [{ id: 'call_9', name: 'search_knowledge', arguments: '{"query":"it"}' }] },
          { role: 'tool', tool_call_id: 'call_9', name: 'search_knowledge', content: 'found it' },
          { role: 'user', content: 'thanks' },
        ],
        { passages, tools: [searchTool], maxOutputTokens: 256 },
      ),
    );
    expect(mock.requests).toHaveLength(1);
    const { body, headers } = mock.requests[0]!;
    expect(headers.authorization).toBe('Bearer sk-test-secret-123');
    expect(headers['content-type']).toBe('application/json');
    expect(body.model).toBe('mock-history');
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.max_tokens).toBe(256);
    expect(body.tools).toEqual([
      { type: 'function', function: { name: searchTool.name, description: searchTool.description, parameters: searchTool.parameters } },
    ]);
    const messages = body.messages!;
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'tool', 'user']);
    expect(messages[0]).toEqual({ role: 'system', content: 'You are Parley.' });
    const passageText = messages[1]!.content as string;
    expect(passageText).toContain('[1] Guide — Setup > Install\nRun npm install.');
    expect(passageText).toContain('[2] FAQ\nResets take one hour.');
    expect(passageText.indexOf('[1]')).toBeLessThan(passageText.indexOf('[2]'));
    expect(passageText).toMatch(/cite/i);
    expect(messages[3]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'search_knowledge', arguments: '{"query":"it"}' } }],
    });
    expect(messages[4]).toEqual({ role: 'tool', tool_call_id: 'call_9', content: 'found it' });
    // The mock echoes the roles it received as one delta.
    const echoed = JSON.parse(textOf(parts)) as { role: string }[];
    expect(echoed.map((m) => m.role)).toEqual(['system', 'system', 'user', 'assistant', 'tool', 'user']);
  });

  it('puts the passages first when there is no system message, and sends no Authorization without a key', async () => {
    mock.reset();
    await collect(provider, turn('mock-history', [{ role: 'user', content: 'q' }], { passages: passages.slice(0, 1) }));
    const { body, headers } = mock.requests[0]!;
    expect(headers.authorization).toBeUndefined();
    expect(body.messages!.map((m) => m.role)).toEqual(['system', 'user']);
    expect(body.messages![0]!.content).toContain('[1] Guide — Setup > Install\nRun npm install.');
    expect(body.tools).toBeUndefined();
    expect(body.max_tokens).toBeUndefined();
  });

  it('maps an upstream 500 to model_unavailable with its status and message, never the key', async () => {
    const { parts, error } = await collectUntilError(keyed, turn('mock-error', [{ role: 'user', content: 'hi' }]));
    expect(parts).toEqual([]);
    expect(error).toBeInstanceOf(AppError);
    const appError = error as AppError;
    expect(appError.code).toBe('model_unavailable');
    expect(appError.status).toBe(502);
    expect(appError.message).toContain('500');
    expect(appError.message).toContain('mock upstream failure');
    expect(appError.message).not.toContain('sk-test-secret-123');
  });

  it('maps a stream cut before finish to model_unavailable after the deltas that arrived', async () => {
    const { parts, error } = await collectUntilError(provider, turn('mock-cut', [{ role: 'user', content: 'hi' }]));
    expect(textOf(parts)).toBe('partial answer ');
    expect(parts.some((p) => p.type === 'finish')).toBe(false);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('model_unavailable');
  });

  it('maps finish_reason length', async () => {
    const parts = await collect(provider, turn('mock-length', [{ role: 'user', content: 'hi' }]));
    expect(textOf(parts)).toBe('Truncated answer');
    expect(parts.at(-1)).toEqual({ type: 'finish', reason: 'length' });
  });

  it('times out with model_timeout when the upstream sends nothing, and aborts the request', async () => {
    const impatient = createOpenAIProvider({ baseUrl: mock.url, timeoutMs: 300 });
    try {
      const { parts, error } = await collectUntilError(impatient, turn('mock-hang', [{ role: 'user', content: 'hi' }]));
      expect(parts).toEqual([]);
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('model_timeout');
      expect((error as AppError).status).toBe(504);
      // The mock sees its hanging response closed: the client dropped the request.
      await vi.waitFor(() => expect(mock.activeStreams()).toBe(0), { timeout: 2_000 });
    } finally {
      await impatient.close();
    }
  });

  it('throws the abort reason when the caller aborts while waiting for the upstream', async () => {
    const ac = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => ac.abort(reason), 50);
    const { parts, error } = await collectUntilError(provider, turn('mock-hang', [{ role: 'user', content: 'hi' }]), ac.signal);
    expect(parts).toEqual([]);
    expect(error).toBe(reason);
    await vi.waitFor(() => expect(mock.activeStreams()).toBe(0), { timeout: 2_000 });
  });

  it('throws an AbortError for an already-aborted signal without calling the upstream', async () => {
    mock.reset();
    const ac = new AbortController();
    ac.abort();
    const { error } = await collectUntilError(provider, turn('gpt-test', [{ role: 'user', content: 'hi' }]), ac.signal);
    expect((error as Error).name).toBe('AbortError');
    expect(mock.requests).toHaveLength(0);
  });

  it('fails with model_unavailable when nothing listens', async () => {
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const dead = createOpenAIProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, timeoutMs: 2_000 });
    try {
      const { error } = await collectUntilError(dead, turn('gpt-test', [{ role: 'user', content: 'hi' }]));
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('model_unavailable');
    } finally {
      await dead.close();
    }
  });
});

describe('openai provider against a paced mock upstream', () => {
  let mock: MockUpstream;
  let provider: Provider;

  beforeAll(async () => {
    mock = await startMockUpstream({ deltas: 1_000, intervalMs: 10 });
    provider = createOpenAIProvider({ baseUrl: mock.url, timeoutMs: 5_000 });
  });

  afterAll(async () => {
    await provider.close();
    await mock.close();
  });

  it('streams the configured number of paced deltas', async () => {
    const small = await startMockUpstream({ deltas: 5, intervalMs: 5 });
    const p = createOpenAIProvider({ baseUrl: small.url, timeoutMs: 5_000 });
    try {
      const parts = await collect(p, turn('gpt-test', [{ role: 'user', content: 'abcdefgh' }]));
      expect(textOf(parts)).toBe('tok tok tok tok tok ');
      expect(parts.slice(-2)).toEqual([
        { type: 'usage', usage: { input_tokens: 2, output_tokens: 5 } },
        { type: 'finish', reason: 'stop' },
      ]);
    } finally {
      await p.close();
      await small.close();
    }
  });

  it('stops mid-stream with the abort reason and closes the upstream stream', async () => {
    const ac = new AbortController();
    const reason = new Error('caller aborted');
    const parts: ModelPart[] = [];
    let error: unknown;
    try {
      await provider.stream(turn('gpt-test', [{ role: 'user', content: 'hi' }]), ac.signal, (part) => {
        parts.push(part);
        if (parts.length === 3) ac.abort(reason);
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBe(reason);
    expect(parts).toHaveLength(3);
    expect(parts.every((p) => p.type === 'text-delta')).toBe(true);
    await vi.waitFor(() => expect(mock.activeStreams()).toBe(0), { timeout: 2_000 });
  });

  // Two ways a body goes out: a short JSON string as it is, a longer one as a one-shot iterable with its
  // content-length in bytes (here two-byte characters, so a count in characters would cut the JSON the
  // mock parses).
  it.each([
    ['a short body', 'x'.repeat(100)],
    ['a body just past the string limit', 'ü'.repeat(600)],
    ['a body of 2 KB in UTF-8', 'ü'.repeat(1_000)],
  ])('sends %s whole, with a content-length and no chunked encoding', async (_label, content) => {
    mock.reset();
    const ac = new AbortController();
    const step = provider.stream(turn('gpt-test', [{ role: 'user', content }]), ac.signal, (part) => {
      if (part.type === 'text-delta') ac.abort(new Error('enough'));
    });
    await expect(step).rejects.toThrow('enough');
    const [request] = mock.requests;
    expect(request!.body.messages).toEqual([{ role: 'user', content }]);
    expect(request!.headers['transfer-encoding']).toBeUndefined();
    expect(Number(request!.headers['content-length'])).toBeGreaterThan(Buffer.byteLength(content));
  });

  it('OneShotBody yields its bytes once, then is done', () => {
    const body = new OneShotBody(Buffer.from('abc'));
    expect([...body].map((b) => b.toString())).toEqual(['abc']);
    expect(body.next()).toEqual({ done: true, value: undefined });
  });

  /** Array-buffer memory of this process after full garbage collections, bytes. */
  const settledArrayBuffers = async (): Promise<number> => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    for (let i = 0; i < 3; i++) { gc(); await new Promise((r) => setTimeout(r, 20)); }
    return process.memoryUsage().arrayBuffers;
  };

  it('keeps no bytes of the response heads while the answers stream', async () => {
    const before = await settledArrayBuffers();
    const ac = new AbortController();
    const firstDeltas: Promise<void>[] = [];
    const steps = Array.from({ length: 40 }, () => {
      let seen!: () => void;
      firstDeltas.push(new Promise<void>((resolve) => { seen = resolve; }));
      const step = provider.stream(turn('mock-deltas-1000-head-12000', [{ role: 'user', content: 'hi' }]), ac.signal, (part) => {
        if (part.type === 'text-delta') seen();
      });
      step.catch(() => undefined);
      return step;
    });
    await Promise.all(firstDeltas);
    const during = await settledArrayBuffers();
    ac.abort(new Error('test done'));
    await Promise.allSettled(steps);
    // undici's controller keeps the raw header Buffers, views into the socket read that carried the
    // head: 40 heads of over 12 KB would hold about 480 KB.
    expect(during - before).toBeLessThan(200_000);
  });

  it('sends a body of a few MB whole (content-length, no chunking) and lets go of its bytes while the answer streams', async () => {
    const settle = settledArrayBuffers;
    // 2 bytes per 'é' in UTF-8: 4 MB of body from 2M characters, so a length in characters would be wrong.
    const prompt = `${'é'.repeat(2_000_000)} end`;
    mock.reset();
    const before = await settle();
    const ac = new AbortController();
    let firstDelta!: () => void;
    const streaming = new Promise<void>((resolve) => { firstDelta = resolve; });
    const step = provider.stream(turn('gpt-test', [{ role: 'system', content: prompt }, { role: 'user', content: 'hi' }]), ac.signal, (part) => {
      if (part.type === 'text-delta') firstDelta();
    });
    step.catch(() => undefined);
    await streaming;
    const during = await settle();
    ac.abort(new Error('test done'));
    await expect(step).rejects.toThrow('test done');
    // A Buffer body kept by undici's Request would hold 4 MB of array-buffer memory until the stream ends.
    expect(during - before).toBeLessThan(1_000_000);
    const [request] = mock.requests;
    expect(request!.body.messages?.[0]).toEqual({ role: 'system', content: prompt });
    expect(request!.headers['transfer-encoding']).toBeUndefined();
    expect(Number(request!.headers['content-length'])).toBeGreaterThan(4_000_000);
  });

  it('a consumer that throws ends the step with its error and closes the upstream stream', async () => {
    let seen = 0;
    const refusal = new Error('consumer gave up');
    const outcome = provider.stream(turn('gpt-test', [{ role: 'user', content: 'hi' }]), new AbortController().signal, (part) => {
      expect(part.type).toBe('text-delta');
      if (++seen === 2) throw refusal;
    });
    await expect(outcome).rejects.toBe(refusal);
    expect(seen).toBe(2);
    await vi.waitFor(() => expect(mock.activeStreams()).toBe(0), { timeout: 2_000 });
  });
});

describe('openai provider against a misbehaving upstream', () => {
  let server: http.Server;
  let base: string;
  const key = 'sk-echo-key-456';

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/bad-json/v1/chat/completions') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: {oops\n\n');
        } else if (req.url === '/echo-key/v1/chat/completions') {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${req.headers.authorization ?? ''}` } }));
        } else if (req.url === '/no-done/v1/chat/completions') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(
            'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\\"a\\""}}]}}]}\n\n' +
              'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}\n\n' +
              'data: {"choices":[{"index":0,"delta":{},"finish_reason":"function_call"}]}\n\n',
          );
        } else if (req.url === '/split-bytes/v1/chat/completions') {
          // A BOM, CRLF line ends, a comment, and every byte in its own write: multi-byte characters and
          // CR/LF pairs arrive cut in two.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const body = Buffer.from(
            '\ufeff: hello\r\n\r\n' +
              'data: {"choices":[{"index":0,"delta":{"content":"héllo "}}]}\r\n\r\n' +
              'data: {"choices":[{"index":0,"delta":{"content":"€ 😀"},"finish_reason":"stop"}]}\r\n\r\n' +
              'data: [DONE]\r\n\r\n',
          );
          res.flushHeaders();
          let at = 0;
          const next = () => {
            if (at === body.length) { res.end(); return; }
            res.write(body.subarray(at, at + 1));
            at++;
            setImmediate(next);
          };
          next();
        } else if (req.url === '/oversized/v1/chat/completions') {
          // A data line that never ends: 9 MB, past the 8 MiB bound of a buffered SSE event.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: ');
          res.end('x'.repeat(9 * 1024 * 1024));
        } else {
          res.writeHead(404).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('maps malformed JSON in a data line to model_unavailable', async () => {
    const p = createOpenAIProvider({ baseUrl: `${base}/bad-json/v1`, timeoutMs: 2_000 });
    try {
      const { parts, error } = await collectUntilError(p, turn('x', [{ role: 'user', content: 'hi' }]));
      expect(textOf(parts)).toBe('ok');
      expect((error as AppError).code).toBe('model_unavailable');
    } finally {
      await p.close();
    }
  });

  it('reads a stream sent a byte at a time, with a BOM, CRLF line ends and multi-byte characters cut in two', async () => {
    const p = createOpenAIProvider({ baseUrl: `${base}/split-bytes/v1`, timeoutMs: 5_000 });
    try {
      const parts = await collect(p, turn('x', [{ role: 'user', content: 'hi' }]));
      expect(textOf(parts)).toBe('héllo € 😀');
      expect(parts.at(-1)).toEqual({ type: 'finish', reason: 'stop' });
    } finally {
      await p.close();
    }
  });

  it('fails with model_unavailable on an SSE line past the 8 MiB bound, after the deltas before it', async () => {
    const p = createOpenAIProvider({ baseUrl: `${base}/oversized/v1`, timeoutMs: 5_000 });
    try {
      const { parts, error } = await collectUntilError(p, turn('x', [{ role: 'user', content: 'hi' }]));
      expect(textOf(parts)).toBe('ok');
      expect((error as AppError).code).toBe('model_unavailable');
      expect((error as AppError).message).toBe('Model upstream sent an oversized SSE event.');
    } finally {
      await p.close();
    }
  });

  it('redacts the API key when the upstream echoes it in an error', async () => {
    const p = createOpenAIProvider({ baseUrl: `${base}/echo-key/v1`, apiKey: key, timeoutMs: 2_000 });
    try {
      const { error } = await collectUntilError(p, turn('x', [{ role: 'user', content: 'hi' }]));
      const appError = error as AppError;
      expect(appError.code).toBe('model_unavailable');
      expect(appError.message).toContain('401');
      expect(appError.message).toContain('Incorrect API key provided');
      expect(appError.message).not.toContain(key);
    } finally {
      await p.close();
    }
  });

  it('completes a finished choice whose body ends without [DONE]; function_call maps to tool_calls', async () => {
    const p = createOpenAIProvider({ baseUrl: `${base}/no-done/v1`, timeoutMs: 2_000 });
    try {
      const parts = await collect(p, turn('x', [{ role: 'user', content: 'hi' }]));
      expect(parts).toEqual([
        { type: 'tool-call', call: { id: 'c1', name: 'f', arguments: '{"a":1}' } },
        { type: 'finish', reason: 'tool_calls' },
      ]);
    } finally {
      await p.close();
    }
  });
});

describe('mock upstream routes', () => {
  let mock: MockUpstream;

  beforeAll(async () => {
    mock = await startMockUpstream();
  });

  afterAll(async () => {
    await mock.close();
  });

  it('lists models, answers non-streaming requests with a chat.completion and rejects bad JSON', async () => {
    const models = (await (await fetch(`${mock.url}/models`)).json()) as { object: string; data: { id: string }[] };
    expect(models.object).toBe('list');
    expect(models.data.map((m) => m.id)).toContain('mock-tool');

    const res = await fetch(`${mock.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock', messages: [{ role: 'user', content: 'ping' }], stream: false }),
    });
    const completion = (await res.json()) as {
      object: string;
      choices: { message: { content: string }; finish_reason: string }[];
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]!.message.content).toBe('You said: ping');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 1, completion_tokens: 3 });

    const bad = await fetch(`${mock.url}/chat/completions`, { method: 'POST', body: '{nope' });
    expect(bad.status).toBe(400);
    await bad.text();
  });
});
