/**
 * A socket reader in its own process: `readInChild(port, path, headers)` connects with the raw client of
 * ws-client.ts (compiled, under dist/) in a child node process, reads frames until `done` or `error`,
 * and reports what it got. Tests of backpressure use it so that the reading client does not share the
 * server's event loop (in one process, a reader cannot keep up with a 32 MiB burst it competes with).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What the child read: token frames, their text length, the last frame, and how the socket ended. */
export interface ChildRead {
  status: number;
  tokens: number;
  textLength: number;
  last: Record<string, unknown> | undefined;
  /** Frames before the turn's first event (e.g. a stored-message frame on an operator view). */
  before: Array<Record<string, unknown>>;
}

const client = fileURLToPath(new URL('../../dist/test/helpers/ws-client.js', import.meta.url));

/**
 * Spawns the reader; resolves once it is connected (the promise `read` then settles with the result).
 * Run `npm run build` first (npm test does).
 */
export function readInChild(port: number, path: string, headers: Record<string, string> = {}): Promise<{ read: Promise<ChildRead> }> {
  const script = `
    import { rawUpgrade } from ${JSON.stringify(client)};
    const up = await rawUpgrade(${port}, ${JSON.stringify(path)}, ${JSON.stringify(headers)});
    if (up.status !== 101) { process.stdout.write(JSON.stringify({ status: up.status }) + '\\n'); process.exit(0); }
    process.stdout.write('connected\\n');
    const s = up.socket;
    const before = [];
    let tokens = 0, textLength = 0, started = false;
    for (;;) {
      const f = await s.next(() => true, 120000, 'a frame');
      if (f.type === 'conversation') started = true;
      if (!started) { before.push(f); continue; }
      if (f.type === 'token') { tokens++; textLength += f.delta.length; }
      if (f.type === 'done' || f.type === 'error') {
        process.stdout.write(JSON.stringify({ status: 101, tokens, textLength, last: f, before }) + '\\n');
        s.drop();
        process.exit(0);
      }
    }`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let connected = false;
    let finish: ((r: ChildRead) => void) | undefined;
    let fail: ((e: Error) => void) | undefined;
    const read = new Promise<ChildRead>((res, rej) => { finish = res; fail = rej; });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      if (!connected && out.startsWith('connected\n')) {
        connected = true;
        out = out.slice('connected\n'.length);
        resolve({ read });
      }
      const nl = out.indexOf('\n');
      if (nl >= 0 && (connected || !out.startsWith('connected'))) {
        const result = JSON.parse(out.slice(0, nl)) as ChildRead;
        if (!connected) { connected = true; resolve({ read }); }
        finish!(result);
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (!connected) reject(new Error(`the reader process exited (${code}) before connecting`));
      else fail!(new Error(`the reader process exited (${code}) without a result`));
    });
  });
}
