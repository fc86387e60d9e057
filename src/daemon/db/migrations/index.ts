import type { Migration } from 'kysely';
import * as m0001 from './0001_daemon.js';
import * as m0002 from './0002_catalog.js';
import * as m0003 from './0003_runs.js';
import * as m0004 from './0004_review_wait.js';
import * as m0005 from './0005_hug_source.js';
import * as m0006 from './0006_artifact_uploads.js';

/** The daemon's migrations, in order. Append, never edit a released one. */
export const daemonMigrations: Record<string, Migration> = {
  '0001_daemon': m0001,
  '0002_catalog': m0002,
  '0003_runs': m0003,
  '0004_review_wait': m0004,
  '0005_hug_source': m0005,
  '0006_artifact_uploads': m0006,
};
