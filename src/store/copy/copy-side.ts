import type { CopiedTable, CopyRow } from './tables.js';

/** Where `store copy` reads: a consistent snapshot of a store, table by table. */
export interface CopySource {
  /** For messages: the store, without any password. */
  readonly description: string;
  /** Rows of `t` in the snapshot. */
  count(t: CopiedTable): Promise<number>;
  /** The rows of `t` in the snapshot, `batch` at a time (messages in the order they were stored). */
  rows(t: CopiedTable, batch: number): AsyncIterable<CopyRow[]>;
  close(): Promise<void>;
}

/** Where `store copy` writes. */
export interface CopyTarget {
  readonly description: string;
  /** The copied tables that hold rows (a target that holds any is refused unless `--force`). */
  nonEmpty(): Promise<string[]>;
  /** Removes everything the target holds. */
  clear(): Promise<void>;
  /** Stores `rows` of `t` (durable when it resolves). */
  insert(t: CopiedTable, rows: CopyRow[]): Promise<void>;
  /** Rebuilds what the rows imply (SQLite's full-text index; MongoDB's `ready`, `message_seq` and TTL dates). */
  finish(): Promise<void>;
  /** Rows of `t` now stored. */
  count(t: CopiedTable): Promise<number>;
  close(): Promise<void>;
}

/** A copy refused before anything was written (exit code 1 of the command). */
export class CopyRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CopyRefused';
  }
}
