import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { cpuSeconds, mainThreadCpuSeconds } from '../../bench/lib/proc.js';

const onLinux = process.platform === 'linux';

describe.skipIf(!onLinux)('bench /proc readers (Linux only: they read /proc)', () => {
  it('counts the main thread alone: CPU burnt in a worker thread moves the process total, not the main thread', async () => {
    const total0 = cpuSeconds(process.pid);
    const main0 = mainThreadCpuSeconds(process.pid);
    // 300 ms of CPU (by the thread's own clock, however busy the machine is) in a worker thread, while
    // the main thread only awaits its message.
    const burn = `
      const { readFileSync } = require('node:fs');
      const ticks = () => { const f = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]); };
      const start = ticks();
      while (ticks() - start < 30) { for (let i = 0; i < 1e5; i++); }
      require('node:worker_threads').parentPort.postMessage(1);`;
    const worker = new Worker(burn, { eval: true });
    await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
    await worker.terminate();
    const total = cpuSeconds(process.pid) - total0;
    const main = mainThreadCpuSeconds(process.pid) - main0;
    expect(total).toBeGreaterThanOrEqual(0.2);
    expect(total - main).toBeGreaterThanOrEqual(0.2);
    expect(main).toBeLessThan(0.2);
  });

  it('gives NaN for a process that does not exist', () => {
    expect(mainThreadCpuSeconds(2 ** 30)).toBeNaN();
    expect(cpuSeconds(2 ** 30)).toBeNaN();
  });
});
