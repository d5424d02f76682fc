/**
 * What only the SQLite adapter has, beyond the store ports: the group commit's savepoints and commit
 * failures. Real files in temp dirs; no mocks; no wall-clock bounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';

const T0 = '2025-01-01T00:00:00.000Z';

const dirs: string[] = [];
const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'parley-sqlite-'));
  dirs.push(d);
  return d;
}

describe('sqlite: group commit', () => {
  function commitDb() {
    const db = openDatabase(join(tempDir(), 'parley.db'));
    closers.push(() => db.close());
    const commits = new GroupCommit(db);
    const conv = (id: string) => () => {
      db.prepare(`INSERT INTO conversations VALUES (?, 'org_A', 'agt_1', 'active', '{}', ?, ?)`).run(id, T0, T0);
      return id;
    };
    const ids = () => db.prepare('SELECT id FROM conversations ORDER BY id').all().map((r) => (r as { id: string }).id);
    return { db, commits, conv, ids };
  }

  it('rolls a failing write back to its savepoint alone, even what it wrote before it threw', async () => {
    const { db, commits, conv, ids } = commitDb();
    const results = await Promise.allSettled([
      commits.write(conv('conv_1')),
      commits.write(() => { conv('conv_2')(); throw new Error('boom after a write'); }),
      commits.write(conv('conv_3')),
    ]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 'conv_1' },
      { status: 'rejected', reason: new Error('boom after a write') },
      { status: 'fulfilled', value: 'conv_3' },
    ]);
    expect(ids()).toEqual(['conv_1', 'conv_3']);
    expect(db.inTransaction).toBe(false);
  });

  it('when the commit itself fails, every write of the batch rejects with that error and nothing is stored', async () => {
    const { db, commits, conv, ids } = commitDb();
    const writes = [
      commits.write(conv('conv_1')),
      // A deferred foreign key is checked at COMMIT: the statement passes, the commit fails.
      commits.write(() => {
        db.pragma('defer_foreign_keys = ON');
        db.prepare(`INSERT INTO api_keys VALUES ('key_1', 'org_missing', 'k', 'hash', 'abcd', ?, NULL)`).run(T0);
      }),
      commits.write(() => { throw new Error('fails on its own'); }),
      commits.write(conv('conv_2')),
    ];
    const results = await Promise.allSettled(writes);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    const reasons = results.map((r) => (r as PromiseRejectedResult).reason as { code?: string; message: string });
    expect(reasons.map((e) => e.code ?? e.message)).toEqual([
      'SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'fails on its own', 'SQLITE_CONSTRAINT_FOREIGNKEY',
    ]);
    expect(reasons[0]).toBe(reasons[1]);
    expect(ids()).toEqual([]);
    expect(db.inTransaction).toBe(false);
    // The next batch commits normally.
    expect(await commits.write(conv('conv_3'))).toBe('conv_3');
    expect(ids()).toEqual(['conv_3']);
  });

  it('rejects every write when the database is closed before the batch runs', async () => {
    const { db, commits, conv } = commitDb();
    const writes = [commits.write(conv('conv_1')), commits.write(conv('conv_2'))];
    db.close();
    const results = await Promise.allSettled(writes);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
