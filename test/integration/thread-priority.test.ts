import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { IngestionPool } from '../../src/knowledge/ingestion-pool.js';
import { currentThreadId, lowerThreadPriority } from '../../src/workers/thread-priority.js';

/** Nice value of every thread of this process, by thread id (field 19 of /proc/self/task/<tid>/stat). */
function threadNices(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), Number(fields[16]));
    } catch { /* the thread ended meanwhile */ }
  }
  return out;
}

const linux = process.platform === 'linux';
if (!linux) console.warn('skipped: per-thread nice values are a Linux feature');

describe.runIf(linux)('thread priority (Linux)', () => {
  it('names the calling thread: the main thread of a process is the process id', () => {
    expect(currentThreadId()).toBe(process.pid);
  });

  it('lowers only the calling worker thread, never raises it, and refuses values outside 0..19', async () => {
    const mainBefore = threadNices().get(process.pid);
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const m = require(${JSON.stringify(new URL('../../dist/src/workers/thread-priority.js', import.meta.url).pathname)});
       const first = m.lowerThreadPriority(12);
       const second = m.lowerThreadPriority(3);
       parentPort.postMessage({ tid: m.currentThreadId(), first, second });
       setTimeout(() => {}, 500);`,
      { eval: true },
    );
    const reply = await new Promise<{ tid: number; first: number; second: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    try {
      expect(reply.tid).not.toBe(process.pid);
      expect(reply.first).toBe(12);
      expect(reply.second).toBe(12); // 3 would raise it: left alone
      const nices = threadNices();
      expect(nices.get(reply.tid)).toBe(12);
      expect(nices.get(process.pid)).toBe(mainBefore);
    } finally {
      await worker.terminate();
    }
    expect(() => lowerThreadPriority(20)).toThrow(RangeError);
    expect(() => lowerThreadPriority(-1)).toThrow(RangeError);
    expect(() => lowerThreadPriority(1.5)).toThrow(RangeError);
  });

  it('runs ingestion workers at the pool\'s nice value while the main thread keeps its own', async () => {
    const mainBefore = threadNices().get(process.pid);
    const before = new Set([...threadNices()].filter(([, n]) => n === 7).map(([tid]) => tid));
    const pool = new IngestionPool({ threads: 1, nice: 7 });
    try {
      const result = await pool.run({ title: 'T', contentType: 'text/markdown', content: '# T\n\nSome text to parse.' });
      expect(result.ok).toBe(true);
      const niceSeven = [...threadNices()].filter(([tid, n]) => n === 7 && !before.has(tid));
      expect(niceSeven).toHaveLength(1);
      expect(threadNices().get(process.pid)).toBe(mainBefore);
    } finally {
      await pool.close();
    }
    expect(() => new IngestionPool({ threads: 1, nice: 20 })).toThrow(/nice must be an integer in 0\.\.19/);
  });
});
