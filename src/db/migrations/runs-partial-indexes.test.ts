import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import type { World } from '../../../test/helpers/world.js';
import * as partialIndexes from './0019_runs_partial_indexes.js';

const PARTIAL = {
  runs_parent: 'parent_run_id',
  runs_child_key: 'child_key',
  runs_control_tx: 'control_tx_id',
  runs_completed: 'completed_at',
  runs_root: 'root_run_id',
  runs_queue_deadline: 'queue_deadline_at',
  runs_run_deadline: 'run_deadline_at',
  runs_daemon_state: 'daemon_id',
};

/**
 * Migration 0019: the indexes of `runs` on columns that are mostly null hold only the rows where the
 * column is set, and the reads that name a value of the column still find their rows through them.
 */
describe('migration 0019_runs_partial_indexes', () => {
  let h: TestHub;
  let w: World;
  let db: Kysely<unknown>;
  before(async () => {
    ({ h, w } = await hubWithTeam('solo'));
    // Migrations are written against no schema type.
    db = h.running.hub.db as unknown as Kysely<unknown>;
  });
  after(() => h.close());

  /** Each index's definition, as the database keeps it. */
  const definitions = async (): Promise<Map<string, string>> => {
    const rows =
      h.running.hub.dialect === 'sqlite'
        ? (
            await sql<{
              name: string;
              def: string;
            }>`select name, sql as def from sqlite_master where type = 'index'`.execute(db)
          ).rows
        : (
            await sql<{
              name: string;
              def: string;
            }>`select indexname as name, indexdef as def from pg_indexes where schemaname = current_schema()`.execute(
              db,
            )
          ).rows;
    return new Map(rows.map((r) => [r.name, r.def ?? '']));
  };

  it('makes the eight indexes partial, keeps runs written before it, and goes back', async () => {
    for (let i = 0; i < 3; i++) await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' });
    for (const [name, column] of Object.entries(PARTIAL)) {
      assert.match(
        (await definitions()).get(name)!,
        new RegExp(`where \\(?"?${column}"? is not null`, 'i'),
        name,
      );
    }
    await partialIndexes.down(db);
    for (const name of Object.keys(PARTIAL))
      assert.doesNotMatch((await definitions()).get(name)!, /where/i, name);
    await partialIndexes.up(db);
    assert.match((await definitions()).get('runs_child_key')!, /unique/i);
    const runs = (await h.ok('runs/list', { realm_id: w.realmId })).data as unknown[];
    assert.ok(runs.length >= 3);
  });

  it('the reads that name a value of the column use the partial index (SQLite plans)', async (t) => {
    if (h.running.hub.dialect !== 'sqlite') return t.skip('query plans of SQLite');
    const reads: [string, string][] = [
      [
        // The runs each daemon that may take a run holds (dispatch.service.ts offerTargetsQuery).
        `select ti.daemon_id, (select count(*) from runs as h where h.daemon_id = ti.daemon_id and h.state in ('assigned', 'running')) as held from team_installs as ti where ti.team_version_id = ?`,
        'runs_daemon_state',
      ],
      ['select run_id from runs where child_key = ?', 'runs_child_key'],
      ['select run_id from runs where control_tx_id = ?', 'runs_control_tx'],
      ['select run_id from runs where parent_run_id = ?', 'runs_parent'],
      ['select run_id from runs where root_run_id = ?', 'runs_root'],
      [
        `select run_id from runs where state = 'queued' and queue_deadline_at <= ? limit 10`,
        'runs_queue_deadline',
      ],
      [
        `select run_id from runs where state = 'running' and run_deadline_at <= ? limit 10`,
        'runs_run_deadline',
      ],
      ['select run_id from runs where completed_at < ? order by completed_at limit 10', 'runs_completed'],
    ];
    for (const [query, index] of reads) {
      // Each value a literal: what matters is that one is named.
      const plan = await sql<{
        detail: string;
      }>`explain query plan ${sql.raw(query.replace(/\?/g, "'x'"))}`.execute(db);
      assert.match(plan.rows.map((r) => r.detail).join(' | '), new RegExp(`INDEX ${index}\\b`), query);
    }
  });
});
