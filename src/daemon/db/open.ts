import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Database, migrate, openDatabaseOf } from '../../db/index.js';
import { daemonMigrations } from './migrations/index.js';
import type { DaemonDB } from './schema.js';

export type { DaemonDB } from './schema.js';

/** Opens (creating the directory) and migrates `<home>/daemon.db`. The daemon always uses SQLite. */
export async function openDaemonDatabase(home: string): Promise<Database<DaemonDB>> {
  mkdirSync(home, { recursive: true });
  const database = await openDatabaseOf<DaemonDB>({ url: path.join(home, 'daemon.db') });
  try {
    await migrate(database.db, daemonMigrations);
    return database;
  } catch (err) {
    await database.close();
    throw err;
  }
}
