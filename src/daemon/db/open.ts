import path from 'node:path';
import { type Database, migrate, openDatabaseOf } from '../../db/index.js';
import { ensurePrivateDir } from '../../shared/private-files.js';
import { daemonMigrations } from './migrations/index.js';
import type { DaemonDB } from './schema.js';

export type { DaemonDB } from './schema.js';

/**
 * Opens (creating the home folder, 0700) and migrates `<home>/daemon.db` (0600, with its WAL and
 * SHM files). The daemon always uses SQLite.
 */
export async function openDaemonDatabase(home: string): Promise<Database<DaemonDB>> {
  ensurePrivateDir(home);
  // WAL checkpoints in a worker thread: the runs' commits never wait for one.
  const database = await openDatabaseOf<DaemonDB>({
    url: path.join(home, 'daemon.db'),
    checkpointInWorker: true,
  });
  try {
    await migrate(database.db, daemonMigrations);
    return database;
  } catch (err) {
    await database.close();
    throw err;
  }
}
