import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { waitFor } from './sse-client.js';

const root = resolve(import.meta.dirname, '../..');
/** The compiled entry point, as `npm start` runs it. */
export const MAIN = join(root, 'dist/src/main.js');

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

/** A running `node dist/src/main.js`: its process, everything it wrote to stdout and stderr, its URL. */
export interface MainProcess {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved as received. */
  output: () => string;
  url: string;
}

/**
 * Starts `node dist/src/main.js` as `npm start` would (stdout and stderr are pipes, not a terminal),
 * on a free port with `dataDir`, and waits for /readyz. `env` overrides PARLEY_* variables
 * (PARLEY_LOG_LEVEL defaults to `warn`). Throws when the process exits before it is ready.
 */
export async function startMain(dataDir: string, env: Record<string, string> = {}): Promise<MainProcess> {
  const port = await freePort();
  let out = '';
  const child = spawn(process.execPath, [MAIN], {
    cwd: root,
    env: { ...process.env, PARLEY_PORT: String(port), PARLEY_HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`server exited: ${out}`);
    try { return (await fetch(`${url}/readyz`)).status === 200 ? true : undefined; } catch { return undefined; }
  }, 20_000, 'readyz');
  return { child, output: () => out, url };
}

/** The exit code of `child` once it has exited (null when a signal ended it). */
export function exitOf(child: ChildProcess): Promise<number | null> {
  // A child killed by a signal keeps exitCode null (signalCode says which): it has exited all the same.
  return new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));
}

/** The first-run credentials of `dataDir` once the bootstrap wrote them (waits up to 20 s). */
export function credentialsOf(dataDir: string): Promise<{ api_key: string; agent_id: string; organization_id: string; owner_email: string; owner_password: string }> {
  const file = join(dataDir, 'initial-credentials.json');
  return waitFor(() => {
    if (!existsSync(file)) return undefined;
    // The file can exist a moment before its content is written: read again until it parses.
    try { return JSON.parse(readFileSync(file, 'utf8')) as { api_key: string; agent_id: string; organization_id: string; owner_email: string; owner_password: string }; } catch { return undefined; }
  }, 20_000, 'credentials');
}
