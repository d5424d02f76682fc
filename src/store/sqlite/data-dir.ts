/**
 * The data directory's file modes. It holds the token signing key, the webhook secrets and every
 * conversation, so only the account that runs Parley may read it: the directory is created 0700 and
 * every file Parley puts there 0600 (the database is created 0600 before SQLite opens it, and SQLite
 * gives the `-wal` and `-shm` files it creates later the database file's mode: its unix VFS,
 * `findCreateFileMode` and `unixOpenSharedMemory`). A directory made earlier, by hand or by an older
 * Parley, keeps its modes: {@link exposedPaths} finds what others can reach, for a warning at start.
 */
import { closeSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Mode of the data directory and of the directories made for it. */
export const DATA_DIR_MODE = 0o700;
/** Mode of every file Parley creates in the data directory. */
export const DATA_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) with mode 0700; an existing directory is left as it is. */
export function ensureDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE });
}

/**
 * Creates `file` empty with mode 0600 unless it exists (then it is left untouched), so that SQLite opens
 * a private file instead of creating one with its default 0644.
 */
export function ensurePrivateFile(file: string): void {
  closeSync(openSync(file, 'a', DATA_FILE_MODE));
}

/** A path in the data directory that others than its owner can reach, with its permission bits. */
export interface ExposedPath {
  path: string;
  /** The permission bits (`mode & 0o777`). */
  mode: number;
}

/**
 * The data directory itself and the entries directly in it whose mode gives the group or others any
 * access (`mode & 0o077`), directory first. Empty on Windows (no POSIX modes) and for a missing directory.
 */
export function exposedPaths(dir: string): ExposedPath[] {
  if (process.platform === 'win32') return [];
  let dirMode: number;
  try {
    dirMode = statSync(dir).mode & 0o777;
  } catch {
    return [];
  }
  const out: ExposedPath[] = [];
  if ((dirMode & 0o077) !== 0) out.push({ path: dir, mode: dirMode });
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    let mode: number;
    try {
      mode = statSync(path).mode & 0o777;
    } catch {
      continue; // gone in between (a -shm file, a temporary file)
    }
    if ((mode & 0o077) !== 0) out.push({ path, mode });
  }
  return out;
}

/** The shell command that takes every access of group and others away from `dir` and what it holds. */
export function fixModesCommand(dir: string): string {
  return `chmod -R go-rwx '${dir.replaceAll("'", "'\\''")}'`;
}
