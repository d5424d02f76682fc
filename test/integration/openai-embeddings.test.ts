/**
 * The embeddings client (src/models/openai/openai-embeddings.ts) against real HTTP servers: the mock
 * upstream, and a node:http server answering what a misbehaving upstream would (out-of-order indexes,
 * base64 vectors, broken shapes, silence). Also the PARLEY_EMBEDDINGS_* configuration.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { ChunkEmbedder, EmbeddingFailed } from '../../src/knowledge/chunk-embedder.js';
import { createOpenAIEmbeddings, EmbeddingsError } from '../../src/models/openai/openai-embeddings.js';
import { mockEmbedding, startMockUpstream, type MockUpstream } from '../helpers/mock-upstream.js';

/**
 * What the raw server answers next: status and body (a string is sent as it is; a function is called with
 * the request's JSON body), or `hang`.
 */
let next: { status: number; body: unknown } | 'hang' = { status: 200, body: {} };
let lastBody: unknown;
const hanging = new Set<http.ServerResponse>();

async function failure(p: Promise<unknown>): Promise<EmbeddingsError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(EmbeddingsError);
    return err as EmbeddingsError;
  }
  throw new Error('expected the call to fail');
}

describe('openai embeddings client', () => {
  let mock: MockUpstream;
  let raw: http.Server;
  let rawUrl: string;

  beforeAll(async () => {
    mock = await startMockUpstream();
    raw = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        lastBody = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (next === 'hang') { hanging.add(res); return; }
        const answer = typeof next.body === 'function' ? (next.body as (b: unknown) => unknown)(lastBody) : next.body;
        const text = typeof answer === 'string' ? answer : JSON.stringify(answer);
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(text);
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
  });

  afterAll(async () => {
    for (const res of hanging) res.destroy();
    raw.closeAllConnections();
    await new Promise((resolve) => raw.close(resolve));
    await mock.close();
  });

  it('posts {model, input} to <base>/embeddings with the bearer key and returns one Float32Array per input, in order', async () => {
    const client = createOpenAIEmbeddings({ baseUrl: mock.url, apiKey: 'sk-test-123', model: 'mock-embed', timeoutMs: 5000 });
    try {
      mock.reset();
      const inputs = ['fix my car', 'sourdough bread', 'automobile maintenance'];
      const vectors = await client.embed(inputs);
      expect(vectors.map((v) => v.constructor.name)).toEqual(['Float32Array', 'Float32Array', 'Float32Array']);
      expect(vectors.map((v) => [...v])).toEqual(inputs.map((t) => [...mockEmbedding(t)]));
      expect(mock.embeddingRequests).toHaveLength(1);
      // base64 asked for (and answered by the mock): the vectors come back exactly.
      expect(mock.embeddingRequests[0]!.body).toEqual({ model: 'mock-embed', input: inputs, encoding_format: 'base64' });
      expect(mock.embeddingRequests[0]!.headers.authorization).toBe('Bearer sk-test-123');
      expect(await client.embed([])).toEqual([]);
      expect(mock.embeddingRequests).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('orders vectors by the answer\'s index, and reads vectors as numbers (servers that ignore encoding_format) or base64', async () => {
    const client = createOpenAIEmbeddings({ baseUrl: rawUrl, model: 'm', timeoutMs: 5000 });
    try {
      const b64 = Buffer.from(new Float32Array([0.5, -2]).buffer).toString('base64');
      next = { status: 200, body: { data: [{ index: 1, embedding: [3, 4] }, { index: 0, embedding: b64 }] } };
      const [a, b] = await client.embed(['first', 'second']);
      expect([...a!]).toEqual([0.5, -2]);
      expect([...b!]).toEqual([3, 4]);
      expect(lastBody).toEqual({ model: 'm', input: ['first', 'second'], encoding_format: 'base64' });
    } finally {
      await client.close();
    }
  });

  it('fails with typed errors: status (retryable for 429 and 5xx), malformed answers, timeout and network', async () => {
    const client = createOpenAIEmbeddings({ baseUrl: rawUrl, apiKey: 'sk-secret-key', model: 'm', timeoutMs: 300 });
    try {
      next = { status: 401, body: { error: { message: 'bad key sk-secret-key given' } } };
      const unauthorized = await failure(client.embed(['x']));
      expect([unauthorized.kind, unauthorized.status, unauthorized.retryable]).toEqual(['status', 401, false]);
      expect(unauthorized.message).toBe('embeddings upstream returned HTTP 401: bad key [redacted] given');
      next = { status: 429, body: { error: { message: 'slow down' } } };
      expect((await failure(client.embed(['x']))).retryable).toBe(true);
      next = { status: 503, body: 'overloaded' };
      expect(await failure(client.embed(['x']))).toMatchObject({ kind: 'status', status: 503, retryable: true, message: 'embeddings upstream returned HTTP 503: overloaded' });

      const malformed: Array<[unknown, string]> = [
        ['not json', 'embeddings answer is not JSON'],
        [{ object: 'list' }, 'embeddings answer has no data array'],
        [{ data: [{ index: 0, embedding: [1] }] }, 'embeddings answer has 1 vectors for 2 inputs'],
        [{ data: [{ index: 0, embedding: [1] }, { index: 0, embedding: [2] }] }, 'embeddings answer has a bad or repeated index 0'],
        [{ data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [1] }] }, 'embeddings answer mixes dimensions (2 and 1)'],
        [{ data: [{ index: 0, embedding: [1, 'x'] }, { index: 1, embedding: [1, 2] }] }, 'embeddings answer has no usable vector at index 0'],
        [{ data: [{ index: 0, embedding: [] }, { index: 1, embedding: [1, 2] }] }, 'embeddings answer has no usable vector at index 0'],
      ];
      for (const [body, message] of malformed) {
        next = { status: 200, body };
        expect(await failure(client.embed(['a', 'b']))).toMatchObject({ kind: 'malformed', message, retryable: false });
      }

      next = 'hang';
      expect(await failure(client.embed(['x']))).toMatchObject({ kind: 'timeout', retryable: true, message: 'embeddings upstream did not answer within 300 ms' });
      expect(await failure(client.embed(['x'], { timeoutMs: 50 }))).toMatchObject({ kind: 'timeout', message: 'embeddings upstream did not answer within 50 ms' });
      const aborted = new AbortController();
      const pending = client.embed(['x'], { signal: aborted.signal });
      aborted.abort();
      expect((await failure(pending)).kind).toBe('aborted');
    } finally {
      await client.close();
    }
    // A port that was just closed: connection refused.
    const gone = http.createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const gonePort = (gone.address() as AddressInfo).port;
    await new Promise((resolve) => gone.close(resolve));
    const nowhere = createOpenAIEmbeddings({ baseUrl: `http://127.0.0.1:${gonePort}/v1`, model: 'm', timeoutMs: 2000 });
    try {
      expect(await failure(nowhere.embed(['x']))).toMatchObject({ kind: 'network', retryable: true });
    } finally {
      await nowhere.close();
    }
  });

  it('the embedder batches, retries retryable failures only, and refuses vectors of mixed dimensions across batches', async () => {
    const client = createOpenAIEmbeddings({ baseUrl: mock.url, model: 'mock-embed', timeoutMs: 5000 });
    try {
      const embedder = new ChunkEmbedder(client, { batch: 2, retryDelaysMs: [0, 0] });
      const drafts = Array.from({ length: 5 }, (_, i) => ({ ord: i, heading: i % 2 ? 'H' : '', text: `text ${i}`, page: null }));
      mock.reset();
      mock.failEmbeddings(2, 502);
      const chunks = await embedder.embedDocument('Title', drafts);
      expect(mock.embeddingRequests.map((r) => [r.status, r.inputs.length])).toEqual([[502, 2], [502, 2], [200, 2], [200, 2], [200, 1]]);
      expect(chunks.map((c) => [c.ord, c.embedding?.model, c.embedding?.vector.length])).toEqual(drafts.map((d) => [d.ord, 'mock-embed', 64]));
      expect([...chunks[1]!.embedding!.vector]).toEqual([...mockEmbedding('Title\nH\ntext 1')]);
      mock.failEmbeddings(3, 500);
      await expect(embedder.embedDocument('Title', drafts)).rejects.toEqual(new EmbeddingFailed('embeddings upstream returned HTTP 500: mock embeddings failure'));
      mock.failEmbeddings(0);
    } finally {
      await client.close();
    }
    const rawClient = createOpenAIEmbeddings({ baseUrl: rawUrl, model: 'm', timeoutMs: 5000 });
    try {
      const embedder = new ChunkEmbedder(rawClient, { batch: 1, retryDelaysMs: [] });
      // Text 'b' gets 3 dimensions, everything else 2: the second batch disagrees with the first.
      next = { status: 200, body: (b: { input: string[] }) => ({ data: b.input.map((t, index) => ({ index, embedding: t.endsWith('b') ? [1, 2, 3] : [1, 2] })) }) };
      await expect(embedder.embedDocument('T', [{ ord: 0, heading: '', text: 'a', page: null }, { ord: 1, heading: '', text: 'b', page: null }]))
        .rejects.toThrow('the model returned vectors of 2 and 3 dimensions');
    } finally {
      await rawClient.close();
    }
    expect(() => new ChunkEmbedder(client, { batch: 0 })).toThrow(RangeError);
    expect(() => new ChunkEmbedder(client, { batch: 2049 })).toThrow(RangeError);
  });
});

describe('embeddings configuration', () => {
  it('is off by default, needs the OpenAI base URL, and bounds the batch size', () => {
    expect(loadConfig({}).embeddings).toBeUndefined();
    expect(loadConfig({ PARLEY_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', PARLEY_EMBEDDINGS_MODEL: 'text-embedding-3-small' }).embeddings)
      .toEqual({ model: 'text-embedding-3-small', batch: 64 });
    expect(loadConfig({ PARLEY_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', PARLEY_EMBEDDINGS_MODEL: 'e', PARLEY_EMBEDDINGS_BATCH: '2048' }).embeddings?.batch).toBe(2048);
    expect(() => loadConfig({ PARLEY_EMBEDDINGS_MODEL: 'text-embedding-3-small' })).toThrow(/PARLEY_EMBEDDINGS_MODEL: needs PARLEY_OPENAI_BASE_URL/);
    expect(() => loadConfig({ PARLEY_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', PARLEY_EMBEDDINGS_MODEL: 'e', PARLEY_EMBEDDINGS_BATCH: '0' })).toThrow(/PARLEY_EMBEDDINGS_BATCH/);
    expect(() => loadConfig({ PARLEY_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', PARLEY_EMBEDDINGS_MODEL: 'e', PARLEY_EMBEDDINGS_BATCH: '2049' })).toThrow(/PARLEY_EMBEDDINGS_BATCH/);
    // The batch size alone, without a model, changes nothing.
    expect(loadConfig({ PARLEY_EMBEDDINGS_BATCH: '8' }).embeddings).toBeUndefined();
  });
});
