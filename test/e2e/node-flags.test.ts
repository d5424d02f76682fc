/**
 * The server's V8 flags (src/node-flags.ts) end to end: `node --single-threaded-gc dist/src/main.js` (what
 * `npm start` runs) starts and says nothing of them; `node dist/src/main.js` still serves and logs a warning
 * naming the missing flag and the command to start with.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exitOf, startMain, type MainProcess } from '../helpers/main-process.js';

const started: MainProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) { p.child.kill('SIGTERM'); await exitOf(p.child); }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-node-flags-'));
  dirs.push(d);
  return d;
}

const ENV = { PARLEY_BOOTSTRAP: 'false' };

describe('node flags of the server process', () => {
  it('started as npm start starts it: no warning', async () => {
    const p = await startMain(dataDir(), ENV);
    started.push(p);
    expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
    expect(p.output()).not.toContain('missing_node_flags');
  });

  it('started without them: serves, and warns with the flag and the command', async () => {
    const p = await startMain(dataDir(), ENV, []);
    started.push(p);
    expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
    const line = p.output().split('\n').find((l) => l.includes('missing_node_flags'));
    expect(line).toBeDefined();
    const entry = JSON.parse(line!) as { level: number; missing_node_flags: string[]; start_with: string };
    expect(entry.level).toBe(40);
    expect(entry.missing_node_flags).toEqual(['--single-threaded-gc']);
    expect(entry.start_with).toBe('node --single-threaded-gc dist/src/main.js');
  });
});
