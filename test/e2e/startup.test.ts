/**
 * `node dist/src/main.js` as `npm start` runs it, watched from its first moment: /readyz is 503
 * `{"status":"starting"}` until the first-start bootstrap has written data/initial-credentials.json (a
 * script that waits for readiness and then reads the key finds it), the start-up line says where it
 * listens and whether TLS is on, and SIGHUP reloads the certificate of a TLS server without dropping an
 * open connection.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { exitOf, freePort, MAIN } from '../helpers/main-process.js';
import { waitFor } from '../helpers/sse-client.js';
import { makeCertificate, openTls } from '../helpers/tls.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-startup-'));
  dirs.push(d);
  return d;
}

/** Spawns main.js with `env` (on top of the test's environment); its output accumulates in `output()`. */
function spawnMain(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  let out = '';
  const child = spawn(process.execPath, [MAIN], { env: { ...process.env, PARLEY_HOST: '127.0.0.1', PARLEY_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  return { child, output: () => out };
}

describe('readiness from the first moment', () => {
  it('/readyz answers 503 starting until the credentials file is written, then 200', async () => {
    expect(existsSync(MAIN), 'run `npm run build` first').toBe(true);
    const dataDir = tempDir();
    const port = await freePort();
    const credentials = join(dataDir, 'initial-credentials.json');
    const { child, output } = spawnMain({ PARLEY_PORT: String(port), PARLEY_DATA_DIR: dataDir });
    const seen: Array<{ status: number; body: unknown; file: boolean }> = [];
    // Polled as fast as it answers from the moment the process starts, as a deployment script would.
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`server exited: ${output()}`);
      try {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        const body = await r.json();
        // Whether the file exists once the answer is in: a 200 seen before the file would break the rule.
        seen.push({ status: r.status, body, file: existsSync(credentials) });
        return r.status === 200 ? true : undefined;
      } catch {
        return undefined;
      }
    }, 60_000, 'readyz 200');
    const starting = seen.filter((s) => s.status === 503);
    expect(starting.length, 'the bootstrap (a password hash, the docs ingested) takes long enough to be seen').toBeGreaterThan(0);
    for (const s of starting) expect(s.body).toEqual({ status: 'starting' });
    expect(starting.some((s) => !s.file), 'a 503 while the credentials file did not exist yet').toBe(true);
    const ready = seen.at(-1)!;
    expect(ready).toEqual({ status: 200, body: { status: 'ready', store: 'sqlite' }, file: true });
    expect(output()).toContain(`listening on http://127.0.0.1:${port}, TLS off (plain HTTP)`);

    // SIGTERM: a clean exit (503 draining during a drain: test/integration/readiness.test.ts).
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
  });
});

describe('TLS from a real process', () => {
  it('serves HTTPS, says so at start, and SIGHUP reloads the certificate without dropping an open connection', async () => {
    const dir = tempDir();
    const first = makeCertificate(dir, 'first');
    const second = makeCertificate(dir, 'second');
    const cert = join(dir, 'server.crt');
    const key = join(dir, 'server.key');
    copyFileSync(first.certFile, cert);
    copyFileSync(first.keyFile, key);
    const port = await freePort();
    const { child, output } = spawnMain({
      PARLEY_PORT: String(port), PARLEY_DATA_DIR: join(dir, 'data'), PARLEY_BOOTSTRAP: 'false',
      PARLEY_TLS_CERT_FILE: cert, PARLEY_TLS_KEY_FILE: key,
    });
    const https = new Agent({ connect: { ca: [first.pem, second.pem] } });
    try {
      await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`server exited: ${output()}`);
        try { return (await undiciFetch(`https://127.0.0.1:${port}/readyz`, { dispatcher: https })).status === 200 ? true : undefined; } catch { return undefined; }
      }, 30_000, 'readyz over HTTPS');
      expect(output()).toContain(`listening on https://127.0.0.1:${port}, TLS on (HTTPS and WSS)`);
      const kept = await openTls(port, [first.pem, second.pem]);
      expect(kept.peerName).toBe('first');

      copyFileSync(second.certFile, cert);
      copyFileSync(second.keyFile, key);
      child.kill('SIGHUP');
      await waitFor(() => (output().includes('TLS certificate reloaded') ? true : undefined), 10_000, 'the reload log line');
      const fresh = await openTls(port, [first.pem, second.pem]);
      expect(fresh.peerName).toBe('second');
      fresh.close();
      const onKept = await kept.get('/healthz');
      expect(onKept.status).toBe(200);
      expect(onKept.headers['strict-transport-security']).toBe('max-age=31536000');
      kept.close();

      // A broken file: the process says why and keeps serving with the certificate it has.
      copyFileSync(first.keyFile, key);
      child.kill('SIGHUP');
      await waitFor(() => (output().includes('the TLS files did not load') ? true : undefined), 10_000, 'the failed reload line');
      expect(child.exitCode).toBeNull();
      const still = await openTls(port, [first.pem, second.pem]);
      expect(still.peerName).toBe('second');
      still.close();
    } finally {
      child.kill('SIGTERM');
      await exitOf(child);
      await https.close();
    }
  });

  it('without TLS, SIGHUP changes nothing (Node would otherwise exit)', async () => {
    const port = await freePort();
    const { child, output } = spawnMain({ PARLEY_PORT: String(port), PARLEY_DATA_DIR: join(tempDir(), 'data'), PARLEY_BOOTSTRAP: 'false' });
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`server exited: ${output()}`);
      try { return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined; } catch { return undefined; }
    }, 30_000, 'readyz');
    child.kill('SIGHUP');
    await waitFor(() => (output().includes('SIGHUP: TLS is off') ? true : undefined), 10_000, 'the SIGHUP line');
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
  });
});
