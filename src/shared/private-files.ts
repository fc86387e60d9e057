import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';

/**
 * Modes of what svc keeps on disk (databases with their WAL and SHM files, and with them the hub's
 * signing key and channel secrets): folders 0700 and files 0600, set explicitly so that the
 * process umask does not matter. The process umask itself is never changed.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

function chmodIfOwned(file: string, mode: number): void {
  try {
    chmodSync(file, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Missing (a WAL file not created yet), or another user's file that the operator set up.
    if (code !== 'ENOENT' && code !== 'EPERM') throw err;
  }
}

/**
 * Creates a folder (and its missing parents) with mode 0700. A folder that already exists keeps
 * its mode: it may be one the operator chose and shares (the files inside are 0600 anyway).
 */
export function ensurePrivateDir(dir: string): void {
  const abs = path.resolve(dir);
  const first = mkdirSync(abs, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (first === undefined) return;
  // mkdir applies the umask: set the mode of every folder created here explicitly.
  for (let d = abs; ; d = path.dirname(d)) {
    chmodSync(d, PRIVATE_DIR_MODE);
    if (d === first || d === path.dirname(d)) break;
  }
}

/** A SQLite database that lives in a file (not `:memory:` or a temporary database). */
export const isSqliteFile = (file: string): boolean => file !== '' && file !== ':memory:';

/** Before SQLite opens the file: its folder exists (0700 when created here) and the file is 0600. */
export function prepareSqliteFile(file: string): void {
  ensurePrivateDir(path.dirname(file));
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  restrictSqliteFiles(file);
}

/**
 * The database file and its `-wal` and `-shm` companions → 0600. SQLite gives new companions the
 * database file's mode; this also tightens ones left with wider modes by an earlier start.
 */
export function restrictSqliteFiles(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) chmodIfOwned(f, PRIVATE_FILE_MODE);
}
