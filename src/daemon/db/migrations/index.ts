import type { Migration } from 'kysely';
import * as m0001 from './0001_daemon.js';

/** The daemon's migrations, in order. Append, never edit a released one. */
export const daemonMigrations: Record<string, Migration> = {
  '0001_daemon': m0001,
};
