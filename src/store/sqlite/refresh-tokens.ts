import type Database from 'better-sqlite3';
import type { RefreshTokensPort } from '../ports.js';
import type { FeedSignal } from './feed.js';
import { familyFromRow } from './refresh-token-writes.js';
import type { Row } from './rows.js';
import type { ConversationWriter } from './writer.js';

/**
 * RefreshTokensPort on SQLite (tables `refresh_families` and `refresh_tokens`, hashes only): reads on the
 * main thread's connection, writes through the writer (refresh-token-writes.ts, where the rules of an
 * exchange are), off the event loop. A write that revoked a family fires `signal` after its commit.
 */
export function createRefreshTokens(db: Database.Database, writer: ConversationWriter, signal: FeedSignal): RefreshTokensPort {
  const sql = {
    family: db.prepare('SELECT * FROM refresh_families WHERE id = ?'),
    familyIdOf: db.prepare('SELECT family_id FROM refresh_tokens WHERE token_hash = ?'),
  };
  const fired = <T>(value: T, changed: boolean): T => {
    if (changed) signal.fire();
    return value;
  };
  return {
    startFamily(family, first) {
      return writer.run('refreshFamilyStart', { family, first });
    },
    async rotate(hash, next, at) {
      const outcome = await writer.run('refreshTokenRotate', { hash, next, at });
      return fired(outcome, outcome.status === 'reused');
    },
    async revokeFamilyOf(hash, reason, at) {
      const done = await writer.run('refreshFamilyRevokeOf', { hash, reason, at });
      return fired(done, done);
    },
    async familyIdOf(hash) {
      return (sql.familyIdOf.get(hash) as { family_id: string } | undefined)?.family_id;
    },
    async revokeAllOf(userId, reason, at) {
      const n = await writer.run('refreshFamiliesRevokeAll', { userId, reason, at });
      return fired(n, n > 0);
    },
    async getFamily(id) {
      const r = sql.family.get(id) as Row | undefined;
      return r ? familyFromRow(r) : undefined;
    },
    prune(before) {
      return writer.run('refreshFamiliesPrune', { before });
    },
  };
}
