import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import type { Kysely } from 'kysely';
import { openDaemonDatabase } from '../../src/daemon/db/open.js';
import type { DaemonDB } from '../../src/daemon/db/schema.js';
import type { Database } from '../../src/db/index.js';
import type { ExecuteRunBody } from '../../src/shared/protocol.js';

/**
 * A daemon database (SQLite, migrated, in a fresh home folder) for the tests of the enclosing suite:
 * opened before them, closed and removed after them. Call `db()` inside a test.
 */
export function daemonDatabaseForSuite(): { db(): Kysely<DaemonDB> } {
  let home: string;
  let database: Database<DaemonDB> | null = null;
  before(async () => {
    home = mkdtempSync(path.join(tmpdir(), 'svc-daemon-db-'));
    database = await openDaemonDatabase(home);
  });
  after(async () => {
    await database?.close();
    rmSync(home, { recursive: true, force: true });
  });
  return {
    db() {
      if (!database) throw new Error('the daemon database opens before the suite’s tests');
      return database.db;
    },
  };
}

/** A `runs/execute` body of a one-phase run. */
export function executeBody(
  runId: string,
  epoch: number,
  phase: ExecuteRunBody['team']['phases'][0] = { name: 'build' },
): ExecuteRunBody {
  return {
    run_id: runId,
    lease_epoch: epoch,
    lease_ms: 30_000,
    execution_type: 'agent',
    team: { name: 't', version: '1', team_version_id: null, phases: [phase] },
    agents: {},
    start_phase: 'build',
    inputs: {},
    outputs: {},
    workspace_path: null,
    call_depth: 0,
  };
}
