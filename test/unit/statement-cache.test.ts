/** statementCache: one prepared set per SQLite connection, prepared at its first use (src/store/sqlite/statement-cache.ts). */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { statementCache } from '../../src/store/sqlite/statement-cache.js';

describe('statementCache', () => {
  it('prepares once per connection, and apart for each connection', () => {
    const a = new Database(':memory:');
    const b = new Database(':memory:');
    const prepared: Database.Database[] = [];
    const statements = statementCache((db) => {
      prepared.push(db);
      return { one: db.prepare('SELECT 1 AS n') };
    });
    expect(prepared).toEqual([]);
    const first = statements(a);
    expect(statements(a)).toBe(first);
    const other = statements(b);
    expect(other).not.toBe(first);
    expect(prepared).toEqual([a, b]);
    expect(first.one.get()).toEqual({ n: 1 });
    a.close();
    b.close();
  });

  it('a statement that does not compile throws, and is tried again at the next use', () => {
    const db = new Database(':memory:');
    let tries = 0;
    const statements = statementCache((d) => { tries++; return d.prepare('SELECT * FROM missing'); });
    expect(() => statements(db)).toThrow(/no such table: missing/);
    db.exec('CREATE TABLE missing (x)');
    expect(statements(db).all()).toEqual([]);
    expect(tries).toBe(2);
    db.close();
  });
});
