/**
 * `PARLEY_PROCESSES=N` (or `auto`: one per core): `npm start` runs N Parley processes on one port, as one
 * service (DESIGN.md "Several processes", docs/scaling.md). This small primary process only supervises:
 *
 * - It starts the children one by one with the same environment, each also listening on a private
 *   internal port of its own (PARLEY_INTERNAL_PORT=0: its neighbours must reach it in particular, and the
 *   shared port reaches whichever process the kernel picks). The first child does the first-start
 *   bootstrap alone; the others start once it is ready, so they find the data it made.
 * - They all listen on the one PARLEY_PORT: uSockets sets SO_REUSEPORT on Linux, and the kernel spreads
 *   new connections over the listening processes by a hash of each connection's addresses and ports (a
 *   connection stays with the process that accepted it; keep-alive connections keep theirs).
 * - A child that exits unexpectedly is started again, after a backoff that doubles per crash in a row
 *   (100 ms to 10 s), with PARLEY_REPLACES_PROCESS set to the id it reported, so its replacement takes
 *   its conversations and deliveries over at once (src/cluster/process-registry.ts).
 * - SIGTERM or SIGINT is passed on to every child, which drains (its running turns finish); the primary
 *   exits when they all have (code 0, or 1 when a child did not exit cleanly).
 */
import { fork, type ChildProcess } from 'node:child_process';

/** What a child tells the primary over its IPC channel once it is ready: its process id in the store. */
export interface ChildReady {
  type: 'parley.ready';
  process_id: string;
}

/** Sends the ready message to the primary, when this process is a child of a group (`groupChild`, an IPC channel). */
export function tellPrimaryReady(processId: string, groupChild: boolean): void {
  if (groupChild && typeof process.send === 'function') {
    process.send({ type: 'parley.ready', process_id: processId } satisfies ChildReady);
  }
}

/** Options of {@link runProcessGroup}. */
export interface ProcessGroupOptions {
  /** Children to run (>= 2). */
  processes: number;
  /** The module each child runs (dist/src/main.js). */
  entry: string;
  /** The environment the children start from (the primary's). */
  env: NodeJS.ProcessEnv;
  /** Where the primary writes what it does (one line each). */
  log: (line: string) => void;
  /** First restart delay after a crash, ms (default 100); doubles per crash in a row, up to `maxBackoffMs`. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

interface Child {
  index: number;
  proc: ChildProcess;
  processId: string | undefined;
  ready: boolean;
}

/**
 * Runs the group until a signal stops it (see the module comment); resolves with the exit code the primary
 * should exit with.
 */
export function runProcessGroup(opts: ProcessGroupOptions): Promise<number> {
  const base = opts.baseBackoffMs ?? 100;
  const maxBackoff = opts.maxBackoffMs ?? 10_000;
  const children = new Map<number, Child>();
  const crashes = new Map<number, number>();
  let stopping = false;
  let failed = false;

  return new Promise((done) => {
    const spawnChild = (index: number, replaces?: string): Promise<void> => new Promise((ready) => {
      const env: NodeJS.ProcessEnv = { ...opts.env, PARLEY_PROCESSES: '1', PARLEY_INTERNAL_PORT: '0', PARLEY_GROUP_CHILD: 'true', PARLEY_PROCESS_INDEX: String(index) };
      delete env.PARLEY_REPLACES_PROCESS;
      if (replaces !== undefined) env.PARLEY_REPLACES_PROCESS = replaces;
      // Only the first child bootstraps an empty data dir; the others start after it.
      if (index > 0) env.PARLEY_BOOTSTRAP = 'false';
      const proc = fork(opts.entry, [], { env, stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
      const child: Child = { index, proc, processId: undefined, ready: false };
      children.set(index, child);
      proc.on('message', (m: unknown) => {
        const msg = m as Partial<ChildReady> | null;
        if (msg?.type !== 'parley.ready' || typeof msg.process_id !== 'string') return;
        child.processId = msg.process_id;
        child.ready = true;
        crashes.delete(index);
        ready();
      });
      proc.on('exit', (code, signal) => {
        if (children.get(index) === child) children.delete(index);
        ready();
        if (stopping) {
          if (code !== 0) failed = true;
          if (children.size === 0) done(failed ? 1 : 0);
          return;
        }
        const n = (crashes.get(index) ?? 0) + 1;
        crashes.set(index, n);
        const wait = Math.min(maxBackoff, base * 2 ** (n - 1));
        opts.log(`Parley process ${index} (${child.processId ?? 'not ready yet'}) exited (${signal ?? `code ${code}`}); starting it again in ${wait} ms`);
        setTimeout(() => { if (!stopping) void spawnChild(index, child.processId); }, wait).unref();
      });
    });

    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      opts.log(`${signal}: draining ${children.size} Parley processes`);
      if (children.size === 0) done(0);
      for (const c of children.values()) c.proc.kill('SIGTERM');
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));

    void (async () => {
      await spawnChild(0);
      for (let i = 1; i < opts.processes && !stopping; i++) void spawnChild(i);
      opts.log(`Parley runs ${opts.processes} processes on one port (PARLEY_PROCESSES)`);
    })();
  });
}
