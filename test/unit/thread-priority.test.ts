import { describe, it, expect } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { currentThreadId, lowerThreadPriority, MAX_NICE } from '../../src/workers/thread-priority.js';

/** The nice value of thread `tid` of this process as the kernel reports it (field 19 of its stat). */
function niceOf(tid: number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

const linux = process.platform === 'linux';
if (!linux) console.warn('skipped: per-thread nice values are a Linux feature');

// The calling thread is this test file's own (a forked process, or a runner's worker thread under
// Stryker): lowering its priority affects no other test.
describe.runIf(linux)('lowerThreadPriority (the thread running this test)', () => {
  it('lowers the calling thread to the value asked, step by step, and never raises it', () => {
    const tid = currentThreadId()!;
    expect(existsSync(`/proc/self/task/${tid}`)).toBe(true);
    expect(tid === process.pid).toBe(isMainThread); // a main thread's id is the process id
    const start = niceOf(tid);
    const target = Math.min(start + 1, MAX_NICE);
    expect(lowerThreadPriority(target)).toBe(target);
    expect(niceOf(tid)).toBe(target);
    expect(lowerThreadPriority(Math.max(target - 1, 0))).toBe(target);
    expect(niceOf(tid)).toBe(target);
    expect(lowerThreadPriority(target)).toBe(target);
  });

  it('accepts exactly the integers 0..19', () => {
    const tid = currentThreadId()!;
    expect(MAX_NICE).toBe(19);
    expect(lowerThreadPriority(0)).toBe(niceOf(tid));
    expect(() => lowerThreadPriority(19.5)).toThrow('nice must be an integer in 0..19, got 19.5');
    expect(() => lowerThreadPriority(20)).toThrow(RangeError);
    expect(() => lowerThreadPriority(-1)).toThrow(RangeError);
    expect(() => lowerThreadPriority(Number.NaN)).toThrow(RangeError);
    // Last, as it leaves this thread at the lowest priority: 19 itself is allowed.
    expect(lowerThreadPriority(19)).toBe(19);
    expect(niceOf(tid)).toBe(19);
  });
});
