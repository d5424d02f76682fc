/** The runner's handle on the load-generator child process (bench/lib/loadgen.ts), over IPC. */
import { join } from 'node:path';
import type { Job } from './loadgen.js';
import { spawnNode, type Owned } from './processes.js';

export interface LoadGen {
  proc: Owned;
  pid: number;
  run<T>(job: Job, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

export async function startLoadGen(root: string): Promise<LoadGen> {
  const proc = spawnNode('loadgen', join(root, 'dist/bench/lib/loadgen.js'), { cwd: root, ipc: true });
  const child = proc.child;
  let seq = 0;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`loadgen did not start\n${proc.tail()}`)), 15_000);
    child.once('message', () => { clearTimeout(timer); resolve(); });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`loadgen exited (${code})\n${proc.tail()}`)); });
  });
  child.on('message', (m: { id?: number; ok?: boolean; result?: unknown; error?: string }) => {
    if (m.id === undefined) return;
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    clearTimeout(w.timer);
    if (m.ok) w.resolve(reviveNaN(m.result));
    else w.reject(new Error(`loadgen job failed: ${m.error}`));
  });
  child.on('exit', (code) => {
    for (const w of waiting.values()) {
      clearTimeout(w.timer);
      w.reject(new Error(`loadgen exited (${code}) during a job\n${proc.tail()}`));
    }
    waiting.clear();
  });
  return {
    proc,
    pid: proc.pid,
    run<T>(job: Job, timeoutMs = 600_000): Promise<T> {
      const id = ++seq;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`loadgen job ${job.type} timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
        child.send({ id, job });
      });
    },
    stop: () => proc.stop(3000),
  };
}

/**
 * IPC serializes NaN (e.g. the percentiles of an empty sample set) as null, and `null - x` is a number in
 * JavaScript. Load-generator results hold no legitimate null, so every null becomes NaN again (NaN then
 * propagates through arithmetic and prints as '—').
 */
function reviveNaN(v: unknown): unknown {
  if (v === null) return Number.NaN;
  if (Array.isArray(v)) return v.map(reviveNaN);
  if (typeof v === 'object' && v !== undefined) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = reviveNaN(o[k]);
    return o;
  }
  return v;
}
