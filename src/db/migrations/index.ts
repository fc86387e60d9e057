import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.js';
import * as m0002 from './0002_tunnel.js';
import * as m0003 from './0003_catalog.js';
import * as m0004 from './0004_installs_workspaces.js';
import * as m0005 from './0005_notifications.js';
import * as m0006 from './0006_runs.js';
import * as m0007 from './0007_reviews.js';
import * as m0008 from './0008_cluster.js';
import * as m0009 from './0009_account_protection.js';
import * as m0010 from './0010_workspace_status.js';
import * as m0011 from './0011_schedules_triggers.js';
import * as m0012 from './0012_secrets_retention.js';
import * as m0013 from './0013_run_numbers.js';
import * as m0014 from './0014_artifacts.js';
import * as m0015 from './0015_concurrency.js';
import * as m0016 from './0016_review_context.js';
import * as m0017 from './0017_runs_daemon.js';
import * as m0018 from './0018_history_realm.js';
import * as m0019 from './0019_runs_partial_indexes.js';
import * as m0020 from './0020_events_retention.js';
import * as m0021 from './0021_expected_rows.js';

/** Every migration, in order. Names sort lexically; append, never edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_tunnel': m0002,
  '0003_catalog': m0003,
  '0004_installs_workspaces': m0004,
  '0005_notifications': m0005,
  '0006_runs': m0006,
  '0007_reviews': m0007,
  '0008_cluster': m0008,
  '0009_account_protection': m0009,
  '0010_workspace_status': m0010,
  '0011_schedules_triggers': m0011,
  '0012_secrets_retention': m0012,
  '0013_run_numbers': m0013,
  '0014_artifacts': m0014,
  '0015_concurrency': m0015,
  '0016_review_context': m0016,
  '0017_runs_daemon': m0017,
  '0018_history_realm': m0018,
  '0019_runs_partial_indexes': m0019,
  '0020_events_retention': m0020,
  '0021_expected_rows': m0021,
};
