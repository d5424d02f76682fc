/**
 * Start-up with PARLEY_MONGODB_URI naming a server that is not there (a closed loopback port; no MongoDB
 * server is needed): `node dist/src/main.js` (what `npm start` runs) and the command line fail within the
 * server selection timeout, with exit code 1 and a message that names the host and the cause and never
 * the password of the connection string.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exitOf, freePort, MAIN } from '../helpers/main-process.js';

const CLI = resolve(import.meta.dirname, '../../dist/src/cli/main.js');
const PASSWORD = 'pw-3xample-S3cret';
const SELECTION_MS = 1500;
const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** Runs `node <script> ...args` with the MongoDB URI of a closed port; its exit code, output and time, ms. */
async function run(script: string, args: string[], port: number): Promise<{ code: number | null; output: string; ms: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-mongo-start-'));
  dirs.push(dataDir);
  const started = performance.now();
  const child = spawn(process.execPath, [script, ...args], {
    env: {
      ...process.env, PARLEY_DATA_DIR: dataDir, PARLEY_PORT: '0', PARLEY_HOST: '127.0.0.1', PARLEY_LOG_LEVEL: 'warn',
      PARLEY_MONGODB_URI: `mongodb://parley:${PASSWORD}@127.0.0.1:${port}/parley_prod?replicaSet=rs0&authSource=admin`,
      PARLEY_MONGODB_SERVER_SELECTION_TIMEOUT_MS: String(SELECTION_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { output += d.toString(); });
  const code = await exitOf(child);
  return { code, output, ms: performance.now() - started };
}

describe('PARLEY_MONGODB_URI naming an unreachable server', () => {
  it('npm start fails after the server selection timeout, naming the host and the cause, never the password', async () => {
    const port = await freePort();
    const r = await run(MAIN, [], port);
    expect(r.code).toBe(1);
    expect(r.output).toContain(`Parley failed to start: Could not connect to MongoDB at 127.0.0.1:${port} (server selection timeout ${SELECTION_MS} ms): `);
    expect(r.output).toContain('ECONNREFUSED');
    expect(r.output).not.toContain(PASSWORD);
    // It gave up after the timeout, not later (process start-up included, on a busy machine).
    expect(r.ms).toBeGreaterThanOrEqual(SELECTION_MS);
    expect(r.ms).toBeLessThan(SELECTION_MS + 10_000);
  });

  it('a command of the command line fails the same way (exit 1)', async () => {
    const port = await freePort();
    const r = await run(CLI, ['orgs', 'create', '--name', 'Acme'], port);
    expect(r.code).toBe(1);
    expect(r.output).toContain(`Could not connect to MongoDB at 127.0.0.1:${port}`);
    expect(r.output).not.toContain(PASSWORD);
  });
});
