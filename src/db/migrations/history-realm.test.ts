import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import type { World } from '../../../test/helpers/world.js';
import * as historyRealm from './0018_history_realm.js';

/** Migration 0018 on a database that has runs: every history entry gets its run's realm. */
describe('migration 0018_history_realm', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    ({ h, w } = await hubWithTeam('solo'));
  });
  after(() => h.close());

  it('fills the realm of the entries written before it, both ways', async () => {
    // Migrations are written against no schema type.
    const db = h.running.hub.db as unknown as Kysely<unknown>;
    for (let i = 0; i < 3; i++) await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' });
    // As a database of the previous version: no column, no index.
    await historyRealm.down(db);
    await historyRealm.up(db);
    const rows = (
      await sql<{ realm_id: string | null; run_realm: string }>`
        select h.realm_id, r.realm_id as run_realm from run_history h join runs r on r.run_id = h.run_id`.execute(
        db,
      )
    ).rows;
    assert.ok(rows.length >= 3, `history entries: ${rows.length}`);
    for (const r of rows) assert.equal(r.realm_id, r.run_realm);
  });
});
