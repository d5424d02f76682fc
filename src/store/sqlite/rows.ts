/**
 * Row helpers shared by the SQLite port modules: a row as better-sqlite3 returns it, and the JSON columns
 * (arrays and objects are stored as JSON text).
 */

/** A result row: column name -> value (TEXT as string, INTEGER as number, BLOB as Buffer, NULL as null). */
export type Row = Record<string, unknown>;

/** The JSON text stored for `value`. */
export const toJson = (value: unknown): string => JSON.stringify(value);

/** The value of a JSON text column (trusted: the store wrote it with toJson). */
export const fromJson = <T>(column: unknown): T => JSON.parse(column as string) as T;

/** A JSON text column that may be NULL. */
export const fromJsonOrNull = <T>(column: unknown): T | null => (column == null ? null : fromJson<T>(column));
