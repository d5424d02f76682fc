/**
 * The CPU priority of ingestion (PARLEY_INGEST_NICE): every thread of a parser process runs at the
 * server's nice value plus the pool's, and the server's own threads keep theirs.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { IngestionPool } from '../../src/knowledge/ingestion-pool.js';

/** Nice value of every thread of process `pid`, by thread id (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNices(pid: number | 'self'): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), Number(fields[16]));
    } catch { /* the thread ended meanwhile */ }
  }
  return out;
}

const linux = process.platform === 'linux';
if (!linux) console.warn('skipped: /proc and nice values per thread are Linux features');

describe.runIf(linux)('ingestion priority (Linux)', () => {
  it('runs every thread of a parser process at the pool\'s nice value above the server\'s; the server\'s threads keep theirs', async () => {
    const before = threadNices('self');
    const own = before.get(process.pid)!;
    const pool = new IngestionPool({ processes: 1, nice: 7 });
    try {
      const result = await pool.run({ title: 'T', contentType: 'text/markdown', content: '# T\n\nSome text to parse.' });
      expect(result.ok).toBe(true);
      const [pid] = pool.pids;
      expect(pid).toBeGreaterThan(0);
      const nices = [...threadNices(pid!).values()];
      expect(nices.length).toBeGreaterThan(4); // Node's main thread, its V8 platform threads and libuv's pool
      expect(new Set(nices)).toEqual(new Set([Math.min(19, own + 7)]));
      expect(threadNices('self').get(process.pid)).toBe(own);
    } finally {
      await pool.close();
    }
    expect(() => new IngestionPool({ processes: 1, nice: 20 })).toThrow(/nice must be an integer in 0\.\.19/);
    expect(() => new IngestionPool({ processes: 1, nice: -1 })).toThrow(/nice must be an integer in 0\.\.19/);
  });

  it('starts each parser process under an operating-system data limit of its memory plus the parser base', async () => {
    const pool = new IngestionPool({ processes: 1, memoryMb: 100 });
    try {
      expect((await pool.run({ title: 'T', contentType: 'text/plain', content: 'Some text.' })).ok).toBe(true);
      const limits = readFileSync(`/proc/${pool.pids[0]}/limits`, 'utf8');
      const data = /^Max data size\s+(\d+)\s+(\d+)\s+bytes/m.exec(limits);
      expect(data?.[1]).toBe(String((100 + 256) * 1024 * 1024));
    } finally {
      await pool.close();
    }
  });
});
