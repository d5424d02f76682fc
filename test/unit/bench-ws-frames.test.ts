import { describe, expect, it } from 'vitest';
import { checkOpenFiles, frameKind, isOverloadedFrame, parseOpenFilesLimit, TokenClock } from '../../bench/lib/ws-frames.js';
import { Samples } from '../../bench/lib/stats.js';
import { AppError } from '../../src/errors/app-error.js';
import type { MessageRecord } from '../../src/store/records.js';
import { errorFrame, operatorPushFrames, PONG, storedMessageFrame } from '../../src/transport/ws/server-frames.js';

const b = (s: string) => Buffer.from(s, 'utf8');

function operatorMessage(content: string): MessageRecord {
  return {
    id: 'msg_1', conversation_id: 'conv_1', org_id: 'org_1', turn_id: null, role: 'operator', content,
    citations: [], tool_runs: [], usage: null, status: 'completed', finish_reason: null, error: null, timing: null, created_at: '2026-01-01T00:00:00.000Z',
  };
}

describe('bench WebSocket frame kinds (frames as the server writes them)', () => {
  it('tells token, done, error, pong and other frames apart', () => {
    const [token, message, done] = operatorPushFrames(operatorMessage('Hi, this is Ada.'));
    expect(frameKind(b(token!))).toBe('token');
    expect(frameKind(b(message!))).toBe('other');
    expect(frameKind(b(done!))).toBe('done');
    expect(frameKind(b(PONG))).toBe('pong');
    expect(frameKind(b(errorFrame(new AppError('not_found', 'No such turn.'))))).toBe('error');
    expect(frameKind(b(storedMessageFrame(operatorMessage('hello'))))).toBe('other');
    expect(frameKind(b('{"type":"token","delta":"tok ","conversation_id":"conv_1"}'))).toBe('token');
  });

  it('a token whose text spells another frame type is still a token (the quotes are escaped in JSON)', () => {
    const [token] = operatorPushFrames(operatorMessage('say "type":"done" and "type":"error"'));
    expect(frameKind(b(token!))).toBe('token');
  });

  it('only an error frame with code overloaded is a typed refusal', () => {
    expect(isOverloadedFrame(b(errorFrame(new AppError('overloaded', 'Too many turns in set-up.'))))).toBe(true);
    expect(isOverloadedFrame(b(errorFrame(new AppError('rate_limited', 'Slow down.'))))).toBe(false);
    const [token] = operatorPushFrames(operatorMessage('"code":"overloaded"'));
    expect(isOverloadedFrame(b(token!))).toBe(false);
  });
});

describe('bench TokenClock (one stream\'s token timing)', () => {
  it('largest silence covers the first token (minus the expected TTFT) and every gap; gaps from token2->token3 on', () => {
    const gaps = new Samples();
    const c = new TokenClock(1000, 0, 20, gaps);
    expect(c.ttftMs).toBeNaN();
    for (const t of [1005, 1025, 1045, 1100, 1100]) c.token(t);
    expect(c.tokens).toBe(5);
    expect(c.ttftMs).toBe(5);
    expect(c.maxGapMs).toBe(55);
    // token1->token2 (20 ms) is not recorded; then 20, 55 and 0 ms gaps minus the 20 ms pacing.
    expect(Array.from(gaps.values())).toEqual([0, 35, -20]);
  });

  it('subtracts the upstream TTFT from the first silence only', () => {
    const c = new TokenClock(0, 250, 20);
    c.token(300);
    c.token(330);
    expect(c.maxGapMs).toBe(50);
    const late = new TokenClock(0, 250, 20);
    late.token(600);
    expect(late.maxGapMs).toBe(350);
  });
});

describe('bench open-files check', () => {
  it('reads the soft limit from /proc/<pid>/limits text', () => {
    const text = [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max processes             96365                96365                processes ',
      'Max open files            20000                65536                files     ',
    ].join('\n');
    expect(parseOpenFilesLimit(text)).toBe(20000);
    expect(parseOpenFilesLimit(text.replace('20000 ', 'unlimited'))).toBeNaN();
    expect(parseOpenFilesLimit('nothing here')).toBeNaN();
  });

  it('refuses a limit below the sockets plus a reserve, naming the limit and how to raise it', () => {
    expect(() => checkOpenFiles('Parley', 10_000, 1024)).toThrow(/open-files limit is 1024.*10000 sockets needs about 10256.*ulimit -n 10256/);
    expect(() => checkOpenFiles('Parley', 10_000, 10_255)).toThrow(/10255/);
    expect(() => checkOpenFiles('Parley', 10_000, 10_256)).not.toThrow();
    expect(() => checkOpenFiles('Parley', 10_000, Number.NaN)).not.toThrow();
  });
});
