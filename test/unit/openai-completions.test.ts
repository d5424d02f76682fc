/**
 * The OpenAI-compatible wire format on its own (API.md "OpenAI-compatible", docs/openai-compatible.md):
 * how a chat completions request becomes a turn (src/transport/http/openai/request.ts) and how a turn's
 * events become a chat.completion or a chunk stream (src/transport/http/openai/completion.ts).
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { tokenJson } from '../../src/runtime/turn/turn-channel.js';
import {
  chatCompletion, ChatCompletionChunks, completionId, openAIFinishReason, openAIUsage,
} from '../../src/transport/http/openai/completion.js';
import { completionTurn, messageText } from '../../src/transport/http/openai/request.js';
import { ChatCompletionRequestSchema } from '../../src/transport/http/schemas.js';
import type { StreamEvent } from '../../src/vocabulary/stream-event.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const request = (body: Record<string, unknown>) => ChatCompletionRequestSchema.parse({ model: 'agt_x', ...body });
const user = (content: unknown) => ({ role: 'user', content });

/** The AppError `completionTurn` throws for `body`, as `[path, message]`. */
function refusal(body: Record<string, unknown>, header?: string): [string, string] {
  try {
    completionTurn(request(body), header);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.code).toBe('validation_failed');
    expect(e.errors).toHaveLength(1);
    expect(e.message).toBe(`The request body is invalid: ${e.errors![0]!.path}: ${e.errors![0]!.message}.`);
    return [e.errors![0]!.path, e.errors![0]!.message];
  }
  throw new Error('expected a refusal');
}

describe('completionTurn: a chat completions request as a turn', () => {
  it('takes the last user message as the visitor message, the earlier user/assistant messages as history, system and developer messages as instructions', () => {
    const turn = completionTurn(request({
      messages: [
        { role: 'system', content: 'S1' },
        user('q1'),
        { role: 'assistant', content: 'a1' },
        { role: 'tool', content: '{"result":1}', tool_call_id: 'call_1' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'function', content: 'f said', name: 'f' },
        user(''),
        { role: 'developer', content: 'D1' },
        user('q2'),
        { role: 'assistant', content: 'prefill after the question' },
        { role: 'system', content: 'S2' },
      ],
      metadata: { source: 'sdk' },
    }), undefined);
    expect(turn).toEqual({
      message: 'q2', conversationId: undefined,
      history: [{ role: 'visitor', content: 'q1' }, { role: 'agent', content: 'a1' }],
      clientInstructions: 'S1\n\nD1\n\nS2', metadata: { source: 'sdk' }, stream: false, includeUsage: false,
    });
  });

  it('continues a conversation from metadata.conversation_id or the header: no history then, the instructions still apply', () => {
    const body = { messages: [{ role: 'system', content: 'S' }, user('old'), { role: 'assistant', content: 'older' }, user('now')] };
    const viaMetadata = completionTurn(request({ ...body, metadata: { conversation_id: 'conv_1', tag: 'x' } }), undefined);
    expect(viaMetadata).toMatchObject({ message: 'now', conversationId: 'conv_1', history: [], clientInstructions: 'S', metadata: { tag: 'x' } });
    expect(completionTurn(request(body), 'conv_2')).toMatchObject({ conversationId: 'conv_2', history: [] });
    expect(completionTurn(request({ ...body, metadata: { conversation_id: 'conv_3' } }), 'conv_3').conversationId).toBe('conv_3');
    expect(refusal({ ...body, metadata: { conversation_id: 'conv_3' } }, 'conv_4')).toEqual(['metadata.conversation_id', 'differs from the X-Parley-Conversation-Id header']);
    expect(refusal({ ...body, metadata: { conversation_id: 'conv-3' } })).toEqual(['metadata.conversation_id', 'must be a conv_ id']);
    expect(refusal(body, 'msg_1')).toEqual(['X-Parley-Conversation-Id', 'must be a conv_ id']);
    expect(refusal(body, 'conv_')).toEqual(['X-Parley-Conversation-Id', 'must be a conv_ id']);
    expect(refusal(body, 'xconv_1')).toEqual(['X-Parley-Conversation-Id', 'must be a conv_ id']);
    expect(refusal(body, 'conv_1 ')).toEqual(['X-Parley-Conversation-Id', 'must be a conv_ id']);
    expect(completionTurn(request(body), `conv_${'a'.repeat(64)}`).conversationId).toBe(`conv_${'a'.repeat(64)}`);
    expect(completionTurn(request(body), 'conv_ab').conversationId).toBe('conv_ab');
    expect(refusal(body, `conv_${'a'.repeat(65)}`)).toEqual(['X-Parley-Conversation-Id', 'must be a conv_ id']);
  });

  it('leaves out system messages without text', () => {
    expect(completionTurn(request({ messages: [{ role: 'system', content: '' }, { role: 'developer', content: [] }, user('q')] }), undefined).clientInstructions).toBeUndefined();
    expect(completionTurn(request({ messages: [{ role: 'system', content: '' }, { role: 'system', content: 'S' }, user('q')] }), undefined).clientInstructions).toBe('S');
  });

  it('reads the stream flags: stream true only when true, include_usage only when true', () => {
    const m = { messages: [user('x')] };
    expect(completionTurn(request({ ...m, stream: true, stream_options: { include_usage: true } }), undefined)).toMatchObject({ stream: true, includeUsage: true });
    expect(completionTurn(request({ ...m, stream: null, stream_options: null }), undefined)).toMatchObject({ stream: false, includeUsage: false });
    expect(completionTurn(request({ ...m, stream: false, stream_options: { include_usage: false } }), undefined)).toMatchObject({ stream: false, includeUsage: false });
    expect(completionTurn(request({ ...m, metadata: null }), undefined)).toMatchObject({ metadata: {}, conversationId: undefined, clientInstructions: undefined });
  });

  it('refuses a request with no user message, or whose last user message has no text or is too long', () => {
    expect(refusal({ messages: [{ role: 'system', content: 'S' }, { role: 'assistant', content: 'a' }] })).toEqual(['messages', 'needs a message with role "user" (the visitor message)']);
    expect(refusal({ messages: [user('q'), user(null)] })).toEqual(['messages.1.content', 'the last user message has no text']);
    expect(refusal({ messages: [user([])] })).toEqual(['messages.0.content', 'the last user message has no text']);
    expect(completionTurn(request({ messages: [user('x'.repeat(32_000))] }), undefined).message).toHaveLength(32_000);
    expect(refusal({ messages: [user([{ type: 'text', text: 'x'.repeat(16_000) }, { type: 'text', text: 'y'.repeat(16_000) }])] }))
      .toEqual(['messages.0.content', 'the last user message is longer than 32000 characters']);
  });

  it('bounds the client instructions to 32,000 characters together', () => {
    const half = 'i'.repeat(15_999);
    expect(completionTurn(request({ messages: [{ role: 'system', content: half }, { role: 'system', content: half }, user('q')] }), undefined).clientInstructions)
      .toHaveLength(32_000);
    expect(refusal({ messages: [{ role: 'system', content: `${half}i` }, { role: 'system', content: half }, user('q')] }))
      .toEqual(['messages', 'the system and developer messages are longer than 32000 characters together']);
  });
});

describe('messageText', () => {
  const msg = (role: string, content: unknown) => request({ messages: [{ role, content }] }).messages[0]!;

  it('joins text parts with a newline; takes an assistant\'s refusal parts; null or absent content is empty', () => {
    expect(messageText(msg('user', 'plain'), 0)).toBe('plain');
    expect(messageText(msg('user', [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }]), 0)).toBe('a\nb');
    expect(messageText(msg('assistant', [{ type: 'text', text: 'a' }, { type: 'refusal', refusal: 'no' }]), 0)).toBe('a\nno');
    expect(messageText(msg('assistant', null), 0)).toBe('');
    expect(messageText(request({ messages: [{ role: 'assistant' }] }).messages[0]!, 0)).toBe('');
  });

  it('refuses parts that carry no text, naming the part', () => {
    const refused = (role: string, content: unknown, i: number): string => {
      try { messageText(msg(role, content), i); } catch (err) { return (err as AppError).errors![0]!.path + ' ' + (err as AppError).errors![0]!.message; }
      throw new Error('expected a refusal');
    };
    expect(refused('user', [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'x' } }], 3)).toBe('messages.3.content.1.type only text content is supported (got "image_url")');
    expect(refused('user', [{ type: 'refusal', refusal: 'no' }], 0)).toBe('messages.0.content.0.type only text content is supported (got "refusal")');
    expect(refused('user', [{ type: 'text' }], 0)).toBe('messages.0.content.0.text a text part needs its text');
    expect(refused('assistant', [{ type: 'input_audio' }], 1)).toBe('messages.1.content.0.type only text content is supported (got "input_audio")');
    expect(refused('assistant', [{ type: 'text', text: 'a' }, { type: 'refusal' }], 2)).toBe('messages.2.content.1.refusal a refusal part needs its refusal');
  });
});

describe('the request schema', () => {
  it('drops unknown fields and ignored parameters; allows n = 1 only', () => {
    const parsed = ChatCompletionRequestSchema.parse({
      model: 'm', messages: [{ role: 'user', content: 'x', extra: 1 }], temperature: 2, tools: [], n: 1, whatever: { a: 1 },
    });
    expect(parsed).toEqual({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 1 });
    expect(ChatCompletionRequestSchema.safeParse({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 2 }).success).toBe(false);
    expect(ChatCompletionRequestSchema.safeParse({ model: 'm', messages: [] }).success).toBe(false);
    expect(ChatCompletionRequestSchema.safeParse({ model: '', messages: [{ role: 'user', content: 'x' }] }).success).toBe(false);
    expect(ChatCompletionRequestSchema.safeParse({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }).success).toBe(false);
    const keys = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
    expect(ChatCompletionRequestSchema.safeParse({ model: 'm', messages: [{ role: 'user', content: 'x' }], metadata: keys }).success).toBe(false);
  });
});

describe('finish reasons and usage', () => {
  it('maps Parley\'s finish reasons to OpenAI\'s: handoff and cancelled are stop', () => {
    expect(['stop', 'length', 'content_filter', 'handoff', 'cancelled'].map((r) => openAIFinishReason(r as never)))
      .toEqual(['stop', 'length', 'content_filter', 'stop', 'stop']);
  });

  it('names usage the OpenAI way', () => {
    expect(openAIUsage({ input_tokens: 3, output_tokens: 4, total_tokens: 7 })).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  });
});

const WHO = { id: completionId('turn_1'), created: 1_700_000_000, model: 'agt_1' };
const TIMING = { queued_ms: 0.01, setup_ms: 0.5, upstream_first_byte_ms: 2, first_token_ms: 2.1, total_ms: 9 };
const CITATION = { document_id: 'doc_1', chunk_id: 'chk_1', title: 'T', snippet: 's', score: 1 };

/** Frames `events` (seq 1, 2, ...) and returns what was written, in order. */
function framed(events: StreamEvent[], includeUsage = false): string[] {
  const chunks = new ChatCompletionChunks(WHO, 'conv_1', includeUsage);
  return events.map((e, i) => chunks.frame(i + 1, e, e.type === 'token' ? tokenJson(e.delta) : JSON.stringify(e)));
}

/** The JSON of every `data:` event of `frames`, `[DONE]` as the string. */
function data(frames: string[]): Array<Json | '[DONE]'> {
  const out: Array<Json | '[DONE]'> = [];
  for (const f of frames) {
    for (const e of f.split('\n\n').filter((x) => x.length > 0)) {
      expect(e.startsWith('data: ')).toBe(true);
      const d = e.slice(6);
      out.push(d === '[DONE]' ? d : JSON.parse(d));
    }
  }
  return out;
}

describe('completionId and chatCompletion', () => {
  it('builds the chat.completion of a one-shot reply', () => {
    expect(WHO.id).toBe('chatcmpl-turn_1');
    const reply = {
      conversation_id: 'conv_1', message_id: 'msg_1', content: 'Hi [1]', citations: [CITATION], tool_runs: [],
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 }, finish_reason: 'handoff' as const,
    };
    expect(chatCompletion(WHO, reply, TIMING)).toEqual({
      id: 'chatcmpl-turn_1', object: 'chat.completion', created: 1_700_000_000, model: 'agt_1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi [1]', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      parley: { conversation_id: 'conv_1', message_id: 'msg_1', citations: [CITATION], tool_runs: [], finish_reason: 'handoff', timing: TIMING },
    });
  });
});

describe('ChatCompletionChunks: a turn\'s events as chat.completion.chunk events', () => {
  const head = { id: 'chatcmpl-turn_1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'agt_1' };

  it('frames a whole turn: role chunk, one chunk per token, nothing for the tail events, the finish chunk, [DONE]', () => {
    const frames = framed([
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' },
      { type: 'token', delta: 'Hel' },
      { type: 'tool_call', tool_call: { id: 'call_1', name: 'search_knowledge', arguments: { query: 'q' } } },
      { type: 'tool_call', tool_call: { id: 'call_2', name: 'lookup', arguments: {} } },
      { type: 'tool_result', tool_result: { tool_call_id: 'call_2', name: 'lookup', output: { error: 'no' }, is_error: true } },
      { type: 'tool_result', tool_result: { tool_call_id: 'call_1', name: 'search_knowledge', output: { hits: 1 }, is_error: false } },
      { type: 'tool_result', tool_result: { tool_call_id: 'call_9', name: 'ghost', output: 1, is_error: false } },
      { type: 'token', delta: 'lo "you"\n\u2028' },
      { type: 'citations', citations: [CITATION] },
      { type: 'message', message_id: 'msg_1' },
      { type: 'usage', usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 }, timing: TIMING },
      { type: 'done', finish_reason: 'stop' },
    ]);
    expect(frames.slice(2, 7)).toEqual(['', '', '', '', '']);
    expect(frames.slice(8, 11)).toEqual(['', '', '']);
    expect(frames[0]).toBe('data: {"id":"chatcmpl-turn_1","object":"chat.completion.chunk","created":1700000000,"model":"agt_1","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}],"parley":{"conversation_id":"conv_1"}}\n\n');
    expect(frames[1]).toBe('data: {"id":"chatcmpl-turn_1","object":"chat.completion.chunk","created":1700000000,"model":"agt_1","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n');
    expect(data(frames)).toEqual([
      { ...head, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }], parley: { conversation_id: 'conv_1' } },
      { ...head, choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] },
      { ...head, choices: [{ index: 0, delta: { content: 'lo "you"\n\u2028' }, finish_reason: null }] },
      {
        ...head, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        parley: {
          conversation_id: 'conv_1', message_id: 'msg_1', citations: [CITATION], finish_reason: 'stop', timing: TIMING,
          tool_runs: [
            { id: 'call_1', name: 'search_knowledge', arguments: { query: 'q' }, output: { hits: 1 }, is_error: false },
            { id: 'call_2', name: 'lookup', arguments: {}, output: { error: 'no' }, is_error: true },
          ],
        },
      },
      '[DONE]',
    ]);
  });

  it('adds the usage chunk (no choices) before [DONE] when asked; a turn without a usage event counts zero', () => {
    const withUsage = data(framed([
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' },
      { type: 'usage', usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 }, timing: TIMING },
      { type: 'done', finish_reason: 'length' },
    ], true));
    expect(withUsage.slice(1)).toEqual([
      { ...head, choices: [{ index: 0, delta: {}, finish_reason: 'length' }], parley: { conversation_id: 'conv_1', citations: [], tool_runs: [], finish_reason: 'length', timing: TIMING } },
      { ...head, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
      '[DONE]',
    ]);
    // A message forwarded to a person (handoff): no usage event, no timing.
    const forwarded = data(framed([
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' },
      { type: 'message', message_id: 'msg_v' },
      { type: 'done', finish_reason: 'handoff' },
    ], true));
    expect(forwarded.slice(1)).toEqual([
      { ...head, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], parley: { conversation_id: 'conv_1', message_id: 'msg_v', citations: [], tool_runs: [], finish_reason: 'handoff', timing: null } },
      { ...head, choices: [], usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } },
      '[DONE]',
    ]);
  });

  it('carries a safety replacement as parley.replace, and maps content_filter; a tool call cut short has no output', () => {
    const frames = data(framed([
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' },
      { type: 'token', delta: 'secret plan' },
      { type: 'tool_call', tool_call: { id: 'call_1', name: 'lookup', arguments: { q: 1 } } },
      { type: 'replace', delta: 'Sorry.' },
      { type: 'done', finish_reason: 'content_filter' },
    ]));
    expect(frames.at(-2)).toMatchObject({ choices: [{ index: 0, delta: {}, finish_reason: 'content_filter' }], parley: { replace: 'Sorry.', finish_reason: 'content_filter' } });
    expect((frames.at(-2) as Json).parley.tool_runs).toEqual([{ id: 'call_1', name: 'lookup', arguments: { q: 1 }, output: null, is_error: false }]);
  });

  it('ends a failed turn with an OpenAI error object and no [DONE]', () => {
    const frames = framed([
      { type: 'conversation', conversation_id: 'conv_1', turn_id: 'turn_1' },
      { type: 'error', error: { type: 'upstream_error', code: 'model_unavailable', message: 'The model failed.' } },
    ]);
    expect(frames[1]).toBe('data: {"error":{"type":"upstream_error","code":"model_unavailable","message":"The model failed."}}\n\n');
  });

  it('escapes what the agent id and completion id hold', () => {
    const chunks = new ChatCompletionChunks({ id: 'chatcmpl-"x"', created: 1, model: 'a"b' }, 'conv_"1"', false);
    const frame = chunks.frame(1, { type: 'conversation', conversation_id: 'conv_"1"', turn_id: 't' }, '');
    expect(data([frame])).toEqual([{ id: 'chatcmpl-"x"', object: 'chat.completion.chunk', created: 1, model: 'a"b', choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }], parley: { conversation_id: 'conv_"1"' } }]);
  });
});
