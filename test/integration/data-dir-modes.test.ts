/**
 * The data directory's file modes (security review, finding 5: the data dir was 0755 and parley.db,
 * -wal and -shm 0644, while they hold the token signing key, the webhook secrets and every conversation).
 * A real server on a data dir it creates itself: the directory is 0700 and every file in it 0600,
 * including the -wal and -shm files SQLite creates later; a start on a directory others can read warns
 * with the command that fixes it. The process umask is set to the common 022 for the test, so that the
 * modes come from Parley and not from a strict umask of the machine running the tests.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../helpers/server.js';

const modeOf = (path: string) => statSync(path).mode & 0o777;

let root: string;
let umaskBefore: number;
beforeAll(() => {
  umaskBefore = process.umask(0o022);
  root = mkdtempSync(join(tmpdir(), 'parley-modes-'));
});
afterAll(() => {
  process.umask(umaskBefore);
  rmSync(root, { recursive: true, force: true });
});

describe('data directory modes', () => {
  it('a new data dir is 0700 and parley.db, -wal and -shm are 0600, also after writes', async () => {
    const dataDir = join(root, 'fresh', 'data');
    const srv = await startTestServer({ PARLEY_DATA_DIR: dataDir, PARLEY_SQLITE_WRITER: 'worker' }, { captureLogs: true });
    try {
      // A chat writes through the writer thread (the WAL grows), as a running server does.
      const agent = await srv.api('/v1/agents', { body: { name: 'modes' } });
      const { id } = await agent.json() as { id: string };
      expect((await srv.api(`/v1/agents/${id}/chat`, { body: { message: 'hello' } })).status).toBe(200);
      const files = readdirSync(dataDir).sort();
      expect(files).toEqual(expect.arrayContaining(['parley.db', 'parley.db-shm', 'parley.db-wal']));
      expect(modeOf(dataDir).toString(8)).toBe('700');
      expect(Object.fromEntries(files.map((f) => [f, modeOf(join(dataDir, f)).toString(8)])))
        .toEqual(Object.fromEntries(files.map((f) => [f, '600'])));
      expect(srv.logs().filter((l) => l.level === 40 && /data directory/.test(l.msg))).toEqual([]);
    } finally {
      await srv.close();
    }
  });

  it('a start on a data dir that others can read warns with the command that fixes it; after it, no warning', async () => {
    const dataDir = join(root, 'old');
    // A data dir as an older Parley left it: 0755, parley.db 0644.
    const first = await startTestServer({ PARLEY_DATA_DIR: dataDir });
    await first.close();
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'parley.db'), 0o644);

    const warned = await startTestServer({ PARLEY_DATA_DIR: dataDir }, { captureLogs: true });
    await warned.close();
    const warnings = warned.logs().filter((l) => l.level === 40 && /data directory/.test(l.msg));
    expect(warnings).toHaveLength(1);
    const fix = `chmod -R go-rwx '${dataDir}'`;
    expect(warnings[0]).toMatchObject({
      data_dir: dataDir, fix,
      // SQLite gives the -wal and -shm files it creates the database file's mode: 0644 too, here.
      exposed: [
        { path: dataDir, mode: '0755' }, { path: join(dataDir, 'parley.db'), mode: '0644' },
        { path: join(dataDir, 'parley.db-shm'), mode: '0644' }, { path: join(dataDir, 'parley.db-wal'), mode: '0644' },
      ],
    });
    expect(warnings[0]!.msg).toContain(fix);

    // The command does what it says.
    execFileSync('sh', ['-c', fix]);
    expect([modeOf(dataDir), modeOf(join(dataDir, 'parley.db'))].map((m) => m.toString(8))).toEqual(['700', '600']);
    const quiet = await startTestServer({ PARLEY_DATA_DIR: dataDir }, { captureLogs: true });
    await quiet.close();
    expect(quiet.logs().filter((l) => l.level === 40 && /data directory/.test(l.msg))).toEqual([]);
  });
});
