import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { childPids, cpuSeconds, cpuTimes, mainThreadCpuSeconds } from '../../bench/lib/proc.js';

const onLinux = process.platform === 'linux';

/** A process that prints its pid and waits. */
const WAIT = `process.stdout.write(process.pid + '\\n'); setInterval(() => {}, 1000);`;
/** A process that starts a WAIT child, then prints its pid and waits. */
const GRANDPARENT = `require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(WAIT)}], { stdio: ['ignore', 'inherit', 'inherit'] }); ${WAIT}`;

/**
 * A child process that burns CPU by its own clocks, however busy the machine is: 300 ms in a worker thread,
 * then on its main thread 300 ms of system time (fstat calls) and 150 ms more of user time (a loop). It prints
 * its getrusage totals (process.cpuUsage, microseconds) and stays alive until its stdin closes, so /proc
 * can be read while it exists.
 */
const BURN = `
const { Worker } = require('node:worker_threads');
const { fstatSync, openSync } = require('node:fs');
const threadTicks = \`const { readFileSync } = require('node:fs');
  const ticks = () => { const f = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]); };
  const start = ticks();
  while (ticks() - start < 30) { for (let i = 0; i < 1e5; i++); }
  require('node:worker_threads').parentPort.postMessage(1);\`;
const w = new Worker(threadTicks, { eval: true });
w.once('message', async () => {
  await w.terminate();
  const fd = openSync('/proc/self/stat', 'r');
  const sysEnd = process.cpuUsage().system + 300000;
  while (process.cpuUsage().system < sysEnd) for (let i = 0; i < 2000; i++) fstatSync(fd);
  const userEnd = process.cpuUsage().user + 150000;
  while (process.cpuUsage().user < userEnd) for (let i = 0; i < 1e5; i++);
  process.stdout.write(JSON.stringify(process.cpuUsage()) + '\\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
});
`;

describe.skipIf(!onLinux)('bench /proc readers (Linux only: they read /proc)', () => {
  it('reads seconds that agree with getrusage, and splits the main thread from the others', async () => {
    const child = spawn(process.execPath, ['-e', BURN], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const usage = await new Promise<{ user: number; system: number }>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('\n')) resolve(JSON.parse(out) as { user: number; system: number });
        });
        child.once('error', reject);
        child.once('exit', (code) => reject(new Error(`burner exited early with ${code}`)));
      });
      const times = cpuTimes(child.pid!);
      const total = cpuSeconds(child.pid!);
      const main = mainThreadCpuSeconds(child.pid!);
      // /proc counts clock ticks (10 ms); the child used a little more after its getrusage call.
      expect(Math.abs(times.user - usage.user / 1e6)).toBeLessThan(0.05);
      expect(Math.abs(times.sys - usage.system / 1e6)).toBeLessThan(0.05);
      expect(Math.abs(total - (usage.user + usage.system) / 1e6)).toBeLessThan(0.08);
      // The worker's 300 ms (plus its start-up, and V8's helpers: about 0.42 s in all here) are in the total
      // only; the main thread's time of both kinds (at least 300 ms of it system time) in both.
      expect(total - main).toBeGreaterThanOrEqual(0.25);
      expect(total - main).toBeLessThan(0.75);
      expect(main).toBeGreaterThanOrEqual(0.45);
    } finally {
      child.stdin!.end();
      child.kill();
    }
  });

  it('gives NaN for a process that does not exist', () => {
    expect(mainThreadCpuSeconds(2 ** 30)).toBeNaN();
    expect(cpuSeconds(2 ** 30)).toBeNaN();
    expect(cpuTimes(2 ** 30)).toEqual({ user: Number.NaN, sys: Number.NaN });
  });

  it('finds the children of a process (not its grandchildren), and none of a process without any', async () => {
    // A parent with two children, one of which has a child of its own; each prints its pid, then waits.
    const script = `const { spawn } = require('node:child_process');
      for (const code of ${JSON.stringify([WAIT, GRANDPARENT])}) spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'inherit', 'inherit'] });
      process.stdout.write('parent ' + process.pid + '\\n');
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    try {
      const pids = await new Promise<number[]>((resolve, reject) => {
        let out = '';
        parent.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const lines = out.split('\n').filter((l) => l !== '');
          if (lines.length === 4) resolve(lines.filter((l) => !l.startsWith('parent')).map(Number));
        });
        parent.once('error', reject);
      });
      const children = childPids(parent.pid!);
      expect(children).toHaveLength(2);
      // The three printed pids are two children and one grandchild: exactly two of them are the children.
      expect(pids.filter((p) => children.includes(p))).toHaveLength(2);
      expect(children).toEqual([...children].sort((a, b) => a - b));
      // Only numbered entries count (not /proc/self, a link to this very process): this process once.
      expect(childPids(process.ppid).filter((p) => p === process.pid)).toEqual([process.pid]);
      expect(childPids(process.ppid).every(Number.isInteger)).toBe(true);
      expect(childPids(children[0]!).length + childPids(children[1]!).length).toBe(1);
      expect(childPids(2 ** 30)).toEqual([]);
    } finally {
      process.kill(-parent.pid!, 'SIGKILL');
    }
  });
});
