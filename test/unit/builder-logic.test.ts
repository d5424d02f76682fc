/**
 * The builder pages' logic without a browser (issue 40): the agent form (state, saved body, JSON Schema
 * check, where validation_failed messages go), a playground exchange folded from stream events, the Usage
 * page's days, totals and threshold resets, upload types and titles, and the editor's and knowledge
 * base's addresses.
 */
import { describe, expect, it } from 'vitest';
import type { components } from '../../src/web/api-types.js';
import { bodyOf, draftOf, fieldMessage, lines, METHODS, newToolKey, schemaProblem } from '../../src/web/dashboard/agent-form.js';
import { applyEvent, newExchange } from '../../src/web/dashboard/playground-turn.js';
import { lastDays, nextReset, perDay } from '../../src/web/dashboard/usage-days.js';
import { ACCEPTED, contentTypeOf, titleOf } from '../../src/web/dashboard/document-files.js';

type Agent = components['schemas']['Agent'];

const agent: Agent = {
  id: 'agt_1', name: 'Guide', description: 'd', instructions: 'i', published: false, public_key: null,
  model: { provider: 'openai', name: 'gpt-x' }, knowledge_base_ids: ['kb_1'],
  tools: ['handoff_to_human', { type: 'http', name: 'lookup', description: 'Finds', url: 'https://x.example/a', method: 'POST', parameters: { type: 'object', properties: { n: { type: 'string' } } }, headers_from_env: { 'X-Key': 'PARLEY_TOOL_SECRET_A' }, timeout_ms: 5000 }],
  safety: { blocked_phrases: ['foo', 'bar baz'], redact_pii: false, blocked_message: 'No.' },
  allowed_origins: ['https://a.example', 'https://b.example'], created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z',
};

describe('agent form', () => {
  it('a new agent starts with the API defaults: builtin model, knowledge search, PII redaction, any origin', () => {
    const d = draftOf(null);
    expect(d).toMatchObject({ name: '', provider: 'builtin', model: 'builtin', builtinTools: ['search_knowledge'], httpTools: [], redactPii: true, allowedOrigins: '*', knowledgeBaseIds: [] });
    expect(bodyOf({ ...d, name: 'N' })).toEqual({
      name: 'N', description: '', instructions: '', model: { provider: 'builtin', name: 'builtin' }, knowledge_base_ids: [], tools: ['search_knowledge'],
      safety: { blocked_phrases: [], redact_pii: true, blocked_message: "I'm sorry, I can't help with that." }, allowed_origins: ['*'],
    });
  });

  it('an agent round-trips through the form unchanged (HTTP tools keep headers_from_env and timeout)', () => {
    const d = draftOf(agent);
    expect(d.blockedPhrases).toBe('foo\nbar baz');
    expect(d.allowedOrigins).toBe('https://a.example\nhttps://b.example');
    expect(d.httpTools[0]!.parameters).toBe(JSON.stringify(agent.tools[1] && (agent.tools[1] as { parameters: unknown }).parameters, null, 2));
    const body = bodyOf(d);
    expect(body).toEqual({
      name: agent.name, description: agent.description, instructions: agent.instructions, model: agent.model, knowledge_base_ids: agent.knowledge_base_ids,
      tools: agent.tools, safety: agent.safety, allowed_origins: agent.allowed_origins,
    });
  });

  it('built-in tools go first, in a fixed order, whatever order they were checked in; fields are trimmed', () => {
    const d = { ...draftOf(agent), builtinTools: ['handoff_to_human', 'search_knowledge'], model: ' gpt-y ' };
    d.httpTools = [{ ...d.httpTools[0]!, name: ' lookup ', url: ' https://x.example/a ' }];
    const body = bodyOf(d);
    expect(body.tools!.slice(0, 2)).toEqual(['search_knowledge', 'handoff_to_human']);
    expect(body.tools![2]).toMatchObject({ name: 'lookup', url: 'https://x.example/a' });
    expect(body.model).toEqual({ provider: 'openai', name: 'gpt-y' });
  });

  it('the form state of an agent: built-in tools apart from HTTP tools; a tool without headers_from_env is saved without it; trims the tool description', () => {
    const d = draftOf(agent);
    expect(d.builtinTools).toEqual(['handoff_to_human']);
    expect(d.httpTools.map((t) => t.name)).toEqual(['lookup']);
    d.httpTools = [{ ...d.httpTools[0]!, headers_from_env: undefined, description: ' Finds \n' }];
    const tool = bodyOf(d).tools![1] as Record<string, unknown>;
    expect(Object.keys(tool)).not.toContain('headers_from_env');
    expect(tool.description).toBe('Finds');
  });

  it('offers the five HTTP methods of the API; tool keys increase', () => {
    expect(METHODS).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    const a = newToolKey();
    expect(newToolKey()).toBe(a + 1);
  });

  it('lines() drops blank lines and trims', () => {
    expect(lines(' a \n\n  \nb')).toEqual(['a', 'b']);
    expect(lines('')).toEqual([]);
  });

  it('schemaProblem: JSON, an object, of type object (or no type)', () => {
    expect(schemaProblem('{"type":"object","properties":{}}')).toBeNull();
    expect(schemaProblem('{"properties":{}}')).toBeNull();
    expect(schemaProblem('{"type":"object",')).toMatch(/^Not valid JSON: /);
    expect(schemaProblem('[1]')).toBe('The schema must be a JSON object.');
    expect(schemaProblem('null')).toBe('The schema must be a JSON object.');
    expect(schemaProblem('"x"')).toBe('The schema must be a JSON object.');
    expect(schemaProblem('{"type":"string"}')).toMatch(/"type" must be "object"/);
  });

  it('fieldMessage: the messages of a path and below it, in both path spellings, joined', () => {
    const fields = [
      { path: 'name', message: 'too short' }, { path: 'tools[2].url', message: 'private address' },
      { path: 'tools.2.parameters.type', message: 'bad' }, { path: 'names', message: 'other' },
    ];
    expect(fieldMessage(fields, 'name')).toBe('too short');
    expect(fieldMessage(fields, 'tools.2.url')).toBe('private address');
    expect(fieldMessage(fields, 'tools.2.parameters')).toBe('bad');
    expect(fieldMessage(fields, 'tools.2')).toBe('private address; bad');
    expect(fieldMessage(fields, 'description')).toBeUndefined();
    expect(fieldMessage([{ path: 'tools[12].url', message: 'm' }], 'tools.12.url')).toBe('m');
  });
});

describe('playground exchange', () => {
  it('folds a turn: tokens append, tool results pair with their call, replace assigns, citations, usage with timing, done', () => {
    let x = newExchange('Hi');
    expect(x).toEqual({ key: x.key, message: 'Hi', reply: '', citations: [], tools: [], usage: null, timing: null, firstTokenMs: null, finish: null, error: null, streaming: true });
    x = applyEvent(x, { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' }, 5);
    x = applyEvent(x, { type: 'tool_call', tool_call: { id: 'c1', name: 'lookup', arguments: { n: '1' } } }, 8);
    x = applyEvent(x, { type: 'tool_call', tool_call: { id: 'c2', name: 'other', arguments: {} } }, 9);
    x = applyEvent(x, { type: 'tool_result', tool_result: { tool_call_id: 'c1', name: 'lookup', output: { ok: 1 }, is_error: false } }, 10);
    expect(x.tools).toEqual([{ id: 'c1', name: 'lookup', arguments: { n: '1' }, output: { ok: 1 }, isError: false }, { id: 'c2', name: 'other', arguments: {} }]);
    x = applyEvent(x, { type: 'token', delta: 'Hel' }, 40);
    x = applyEvent(x, { type: 'token', delta: 'lo' }, 55);
    expect(x.reply).toBe('Hello');
    expect(x.firstTokenMs).toBe(40);
    x = applyEvent(x, { type: 'replace', delta: 'Redacted' }, 60);
    expect(x.reply).toBe('Redacted');
    const citation = { document_id: 'doc_1', chunk_id: 'chk_1', title: 'T', snippet: 's', score: 1, heading: 'H', page: 2 };
    x = applyEvent(x, { type: 'citations', citations: [citation] }, 61);
    const timing = { queued_ms: 0, setup_ms: 1, upstream_first_byte_ms: 2, first_token_ms: 3, total_ms: 4 };
    x = applyEvent(x, { type: 'usage', usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 }, timing } as never, 62);
    expect(x).toMatchObject({ citations: [citation], usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 }, timing, streaming: true });
    x = applyEvent(x, { type: 'done', finish_reason: 'stop' }, 63);
    expect(x).toMatchObject({ finish: 'stop', streaming: false, error: null });
  });

  it('usage without timing (an older server) leaves timing null; an error event ends the turn with its message', () => {
    // An older server's usage event has no timing (the generated types of this one require it).
    const older = { type: 'usage', usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } as unknown as Parameters<typeof applyEvent>[1];
    let x = applyEvent(newExchange('q'), older, 1);
    expect(x.timing).toBeNull();
    x = applyEvent(x, { type: 'error', error: { type: 'upstream_error', code: 'model_timeout', message: 'The model did not answer.' } }, 2);
    expect(x).toMatchObject({ error: 'The model did not answer.', streaming: false });
    expect(applyEvent(x, { type: 'message', message_id: 'msg_1' }, 3)).toBe(x);
  });

  it('exchanges get distinct keys', () => {
    expect(newExchange('a').key).not.toBe(newExchange('a').key);
  });
});

describe('usage days', () => {
  it('lastDays: 30 UTC days ending on the UTC day of now, across a month end', () => {
    const days = lastDays(new Date('2026-03-02T23:30:00-05:00'));
    expect(days).toHaveLength(30);
    expect(days.at(-1)).toBe('2026-03-03');
    expect(days[0]).toBe('2026-02-02');
    expect(days.slice(25, 28)).toEqual(['2026-02-27', '2026-02-28', '2026-03-01']);
    expect(lastDays(new Date('2026-03-02T12:00:00Z'), 3)).toEqual(['2026-02-28', '2026-03-01', '2026-03-02']);
  });

  it('nextReset: the next UTC midnight for a day, the first of the next UTC month for a month (and of January after December)', () => {
    const now = new Date('2026-11-28T15:04:05Z');
    expect(nextReset('day', now).toISOString()).toBe('2026-11-29T00:00:00.000Z');
    expect(nextReset('month', now).toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(nextReset('month', new Date('2026-12-31T23:59:59Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(nextReset('day', new Date('2026-12-31T00:00:00Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  it('perDay: sums the agent given (or every agent) per day, zeros for days without usage, ignores days outside', () => {
    const row = (agent_id: string, day: string, i: number, o: number, t: number) => ({ agent_id, day, input_tokens: i, output_tokens: o, total_tokens: i + o, turns: t });
    const rows = [row('a', '2026-01-02', 10, 1, 1), row('b', '2026-01-02', 5, 2, 3), row('a', '2026-01-03', 7, 7, 2), row('a', '2025-12-01', 99, 99, 9)];
    const days = ['2026-01-01', '2026-01-02', '2026-01-03'];
    expect(perDay(rows, days, null)).toEqual([
      { day: '2026-01-01', input: 0, output: 0, turns: 0 }, { day: '2026-01-02', input: 15, output: 3, turns: 4 }, { day: '2026-01-03', input: 7, output: 7, turns: 2 },
    ]);
    expect(perDay(rows, days, 'b')).toEqual([
      { day: '2026-01-01', input: 0, output: 0, turns: 0 }, { day: '2026-01-02', input: 5, output: 2, turns: 3 }, { day: '2026-01-03', input: 0, output: 0, turns: 0 },
    ]);
  });
});

describe('uploads', () => {
  it('types by extension, whatever the browser says; else the browser type; else octet-stream', () => {
    expect(contentTypeOf({ name: 'a.md', type: '' })).toBe('text/markdown');
    expect(contentTypeOf({ name: 'A.MARKDOWN', type: 'text/x-markdown' })).toBe('text/markdown');
    expect(contentTypeOf({ name: 'a.txt', type: '' })).toBe('text/plain');
    expect(contentTypeOf({ name: 'a.htm', type: '' })).toBe('text/html');
    expect(contentTypeOf({ name: 'a.html', type: '' })).toBe('text/html');
    expect(contentTypeOf({ name: 'a.text', type: '' })).toBe('text/plain');
    expect(contentTypeOf({ name: 'a.pdf.exe', type: '' })).toBe('application/octet-stream');
    expect(contentTypeOf({ name: 'notes.md.txt', type: '' })).toBe('text/plain');
    expect(contentTypeOf({ name: 'a.pdf', type: 'application/octet-stream' })).toBe('application/pdf');
    expect(contentTypeOf({ name: 'a.docx', type: '' })).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect(contentTypeOf({ name: 'a.csv', type: 'text/csv' })).toBe('text/csv');
    expect(contentTypeOf({ name: 'noext', type: '' })).toBe('application/octet-stream');
  });

  it('the file input offers the extensions Parley ingests', () => {
    expect(ACCEPTED.split(',')).toEqual(['.md', '.markdown', '.txt', '.text', '.html', '.htm', '.pdf', '.docx']);
  });

  it('titles are file names without the extension, at most 300 characters', () => {
    expect(titleOf('Refund policy.pdf')).toBe('Refund policy');
    expect(titleOf('archive.tar.gz')).toBe('archive.tar');
    expect(titleOf('.md')).toBe('.md');
    expect(titleOf('README')).toBe('README');
    expect(titleOf('Spaced name .md')).toBe('Spaced name');
    expect(titleOf(`${'x'.repeat(400)}.md`)).toHaveLength(300);
  });
});
