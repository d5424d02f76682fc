import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { waitFor } from './sse-client.js';

/** The project root and the compiled entry point `npm start` runs. */
export const projectRoot = resolve(import.meta.dirname, '../..');
export const mainJs = join(projectRoot, 'dist/src/main.js');

/** A free loopback port (bind to 0, read, release). */
export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

/** A server started as its own process, as `npm start` runs it. */
export interface ChildServer {
  child: ChildProcess;
  url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: () => Promise<number | null>;
}

/**
 * Starts `node dist/src/main.js` with `PARLEY_*` overrides on a free port of 127.0.0.1 and waits for
 * `/readyz` (20 s). Throws with the captured output when the process exits first.
 */
export async function startChild(dataDir: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const port = await freePort();
  let out = '';
  const child = spawn(process.execPath, [mainJs], {
    cwd: projectRoot,
    env: { ...process.env, PARLEY_PORT: String(port), PARLEY_HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited: ${out}`);
    try { return (await fetch(`${url}/readyz`)).status === 200 ? true : undefined; } catch { return undefined; }
  }, 20_000, 'readyz');
  return { child, url, output: () => out, exited: () => exit };
}
