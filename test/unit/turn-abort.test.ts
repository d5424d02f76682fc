import { afterEach, describe, expect, it, vi } from 'vitest';
import { TurnAbort } from '../../src/runtime/turn/turn-abort.js';

describe('TurnAbort', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('starts not aborted, then keeps the first reason only and calls each listener once, in order', () => {
    const abort = new TurnAbort();
    expect(abort.aborted).toBe(false);
    expect(abort.reason).toBeUndefined();
    const calls: string[] = [];
    const fn = () => calls.push('function');
    const obj = { handleEvent: () => calls.push('object') };
    const third = () => calls.push('third');
    abort.addEventListener('abort', fn);
    abort.addEventListener('abort', obj, { once: true });
    abort.addEventListener('abort', third);
    const first = new Error('first');
    abort.abort(first);
    abort.abort(new Error('second'));
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe(first);
    expect(calls).toEqual(['function', 'object', 'third']);
  });

  it('adds a listener once however often it is added, and never calls a removed one', () => {
    const abort = new TurnAbort();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const b = () => calls.push('b');
    const c = () => calls.push('c');
    abort.addEventListener('abort', a);
    abort.addEventListener('abort', a); // single slot: same listener
    abort.addEventListener('abort', b);
    abort.addEventListener('abort', b); // array: same listener
    abort.addEventListener('abort', c);
    abort.removeEventListener('abort', b);
    abort.removeEventListener('abort', () => calls.push('never added'));
    abort.abort('x');
    expect(calls).toEqual(['a', 'c']);
  });

  it('forgets its only listener when it is removed', () => {
    const abort = new TurnAbort();
    const a = vi.fn();
    abort.addEventListener('abort', a);
    abort.removeEventListener('abort', a);
    abort.abort('x');
    expect(a).not.toHaveBeenCalled();
  });

  it('does not call a listener added after the abort (check `aborted` first, as with AbortSignal)', () => {
    const abort = new TurnAbort();
    abort.abort('gone');
    const late = vi.fn();
    abort.addEventListener('abort', late);
    abort.abort('again');
    expect(late).not.toHaveBeenCalled();
    expect(abort.reason).toBe('gone');
  });

  it('calls the other listeners when one throws, and reports the error as uncaught on the next tick', async () => {
    const abort = new TurnAbort();
    const thrown = new Error('listener broke');
    const reported: unknown[] = [];
    const spy = vi.spyOn(process, 'nextTick').mockImplementation(((fn: () => void) => {
      try { fn(); } catch (err) { reported.push(err); }
    }) as typeof process.nextTick);
    const after = vi.fn();
    abort.addEventListener('abort', () => { throw thrown; });
    abort.addEventListener('abort', after);
    abort.abort('x');
    expect(after).toHaveBeenCalledTimes(1);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(reported).toEqual([thrown]);
  });

  it('gives a real AbortSignal that aborts with it, with the same reason, made once', () => {
    const abort = new TurnAbort();
    const signal = abort.toSignal();
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(abort.toSignal()).toBe(signal);
    expect(signal.aborted).toBe(false);
    const seen = vi.fn();
    signal.addEventListener('abort', seen);
    const reason = Symbol('cancelled');
    abort.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(seen).toHaveBeenCalledTimes(1);
  });

  it('gives an already aborted signal once it has aborted', () => {
    const abort = new TurnAbort();
    const reason = new Error('shutdown');
    abort.abort(reason);
    const signal = abort.toSignal();
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
  });
});
