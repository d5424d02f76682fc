/**
 * The operator view's thread (src/web/dashboard/thread.ts): stored messages and operator-socket frames
 * (API.md "WebSockets") folded into one list, nothing shown twice.
 */
import { describe, expect, it } from 'vitest';
import type { Frame, Message } from '../../src/web/dashboard/messages.js';
import { addStored, applyFrame, EMPTY_THREAD, lastStoredId, type Thread } from '../../src/web/dashboard/thread.js';

const C = 'conv_01TEST';

function stored(id: string, role: Message['role'], content: string, turnId: string | null = null): Message {
  return {
    id, conversation_id: C, turn_id: turnId, role, content, citations: [], tool_runs: [], usage: null, status: 'completed',
    finish_reason: role === 'agent' ? 'stop' : null, error: null, timing: null, created_at: '2026-11-23T10:00:00.000Z',
  };
}

const fold = (t: Thread, frames: Frame[]) => frames.reduce(applyFrame, t);
const turn = (turnId: string, words: string[], messageId: string): Frame[] => [
  { type: 'conversation', conversation_id: C, turn_id: turnId },
  ...words.map((w) => ({ type: 'token', delta: w, conversation_id: C })),
  { type: 'citations', citations: [{ document_id: 'doc_1', chunk_id: 'chk_1', title: 'Refunds', snippet: 'Fourteen days.', score: 2 }], conversation_id: C },
  { type: 'message', message_id: messageId, conversation_id: C },
  { type: 'usage', usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 }, conversation_id: C },
  { type: 'done', finish_reason: 'stop', conversation_id: C },
];

describe('thread', () => {
  it('a streamed turn builds one agent reply with its id, citations and end', () => {
    const frames = turn('turn_1', ['Refunds ', 'take ', 'fourteen days.'], 'msg_02');
    const midway = fold(addStored(EMPTY_THREAD, [stored('msg_01', 'visitor', 'How long?')]), frames.slice(0, 3));
    expect(midway.items.map((i) => [i.role, i.content, i.streaming])).toEqual([['visitor', 'How long?', false], ['agent', 'Refunds take ', true]]);
    const t = fold(midway, frames.slice(3));
    expect(t.items[1]).toMatchObject({ id: 'msg_02', turnId: 'turn_1', content: 'Refunds take fourteen days.', streaming: false, finish: null });
    expect(t.items[1]!.citations.map((c) => c.title)).toEqual(['Refunds']);
    expect(t.current).toBeNull();
    expect(lastStoredId(t)).toBe('msg_02');
  });

  it('replace swaps the text; a tool call and its result make one line; done/handoff is kept', () => {
    const t = fold(EMPTY_THREAD, [
      { type: 'conversation', conversation_id: C, turn_id: 'turn_1' },
      { type: 'token', delta: 'bad words', conversation_id: C },
      { type: 'tool_call', tool_call: { id: 'call_1', name: 'handoff_to_human', arguments: {} }, conversation_id: C },
      { type: 'tool_result', tool_result: { tool_call_id: 'call_1', name: 'handoff_to_human', output: {}, is_error: false }, conversation_id: C },
      { type: 'replace', delta: 'Safe text.', conversation_id: C },
      { type: 'done', finish_reason: 'handoff', conversation_id: C },
    ]);
    expect(t.items).toHaveLength(1);
    expect(t.items[0]).toMatchObject({ content: 'Safe text.', finish: 'handoff', streaming: false });
    expect(t.items[0]!.tools).toEqual([{ id: 'call_1', name: 'handoff_to_human', done: true, isError: false }]);
  });

  it('an operator message told twice (the POST answer and the socket frame) shows once', () => {
    const posted = addStored(EMPTY_THREAD, [stored('msg_05', 'operator', 'Hi, this is Ada.')]);
    const t = applyFrame(posted, { type: 'message', conversation_id: C, message_id: 'msg_05', role: 'operator', content: 'Hi, this is Ada.', turn_id: null, created_at: '2026-11-23T10:00:01.000Z' });
    expect(t.items.map((i) => [i.id, i.role])).toEqual([['msg_05', 'operator']]);
  });

  it('a turn replayed from its start after a reconnect rebuilds the reply instead of doubling it', () => {
    const frames = turn('turn_1', ['One ', 'two ', 'three.'], 'msg_02');
    const cut = fold(EMPTY_THREAD, frames.slice(0, 3));
    const t = fold(cut, frames);
    expect(t.items.map((i) => i.content)).toEqual(['One two three.']);
  });

  it('the stored reply of a catch-up completes the streamed one of the same turn and keeps its citations', () => {
    const cut = fold(EMPTY_THREAD, turn('turn_1', ['One ', 'two'], 'msg_02').slice(0, 3));
    const t = applyFrame(cut, { type: 'message', conversation_id: C, message_id: 'msg_02', role: 'agent', content: 'One two three.', turn_id: 'turn_1', created_at: '2026-11-23T10:00:02.000Z' });
    expect(t.items).toHaveLength(1);
    expect(t.items[0]).toMatchObject({ id: 'msg_02', content: 'One two three.', streaming: false });
    // A late replay of that finished turn changes nothing.
    expect(fold(t, turn('turn_1', ['x'], 'msg_02')).items.map((i) => i.content)).toEqual(['One two three.']);
  });

  it('a failed turn shows its error; frames of no turn are ignored', () => {
    const t = fold(EMPTY_THREAD, [
      { type: 'token', delta: 'orphan', conversation_id: C },
      { type: 'conversation', conversation_id: C, turn_id: 'turn_9' },
      { type: 'error', error: { type: 'upstream_error', code: 'model_unavailable', message: 'The model is unavailable.' }, conversation_id: C },
    ]);
    expect(t.items).toHaveLength(1);
    expect(t.items[0]).toMatchObject({ streaming: false, error: 'The model is unavailable.', content: '' });
  });
});
