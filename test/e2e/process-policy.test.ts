import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const policy = join(resolve(import.meta.dirname, '../..'), 'dist/src/process-policy.js');

/** Runs `body` in a fresh node process with the policy installed (a logger printing JSON lines, a close that logs). */
async function inProcess(body: string): Promise<{ code: number; out: string }> {
  const script = `
    const { installFailurePolicy } = await import(${JSON.stringify(policy)});
    const log = (level) => (obj, msg) => console.log(JSON.stringify({ level, msg, err: String(obj.err?.message ?? obj.err) }));
    installFailurePolicy({ error: log('error'), fatal: log('fatal') }, async () => { console.log(JSON.stringify({ msg: 'closed' })); });
    ${body}
  `;
  try {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { timeout: 10_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout };
  }
}

describe('process failure policy', () => {
  it('logs an unhandled rejection and keeps the process serving', async () => {
    const { code, out } = await inProcess(`
      Promise.reject(new Error('lost promise'));
      setTimeout(() => console.log(JSON.stringify({ msg: 'still alive' })), 50);
    `);
    expect(code).toBe(0);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; level?: string; err?: string });
    expect(lines).toEqual([
      { level: 'error', msg: 'unhandled promise rejection (a bug): the server keeps serving', err: 'lost promise' },
      { msg: 'still alive' },
    ]);
  });

  it('on an uncaught exception logs it, drains, and exits with code 1', async () => {
    const { code, out } = await inProcess(`
      setTimeout(() => { throw new Error('broken invariant'); }, 10);
      setInterval(() => {}, 1000);
    `);
    expect(code).toBe(1);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(['uncaught exception: draining, then exiting with code 1', 'closed']);
  });
});
