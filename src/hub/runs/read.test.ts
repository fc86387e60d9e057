import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import type { World } from '../../../test/helpers/world.js';
import { loadRunWithDaemon } from './run-read.repo.js';

describe('reading runs that are asked for together', () => {
  let h: TestHub;
  let w: World;
  let mine: string[];
  let other: string;
  before(async () => {
    ({ h, w } = await hubWithTeam('read'));
    mine = [];
    for (let i = 0; i < 3; i++)
      mine.push((await h.ok('runs/new', { realm_id: w.realmId, team: 'read' })).data.run_id);
    other = (await h.ok('runs/new', { realm_id: w.otherRealmId, team: 'read' })).data.run_id;
  });
  after(() => h.close());

  it('answers each read its own run, repeated and missing ones included, in one turn', async () => {
    const db = h.running.hub.db;
    const ids = [mine[2]!, 'run_missing', mine[0]!, other, mine[2]!, mine[1]!];
    const rows = await Promise.all(ids.map((id) => loadRunWithDaemon(db, id)));
    assert.deepEqual(
      rows.map((r) => r?.run_id),
      [mine[2], undefined, mine[0], other, mine[2], mine[1]],
    );
    assert.ok(rows.every((r) => r === undefined || r.daemon_status === null));
    assert.equal(rows[3]!.realm_id, w.otherRealmId);
  });

  it('checks each caller on its own run when requests arrive together', async () => {
    const member = w.tokens.realm_member!;
    const replies = await Promise.all([
      h.call('runs/get_by_id', { run_id: mine[0] }, member),
      h.call('runs/get_by_id', { run_id: other }, member),
      h.call('runs/get_by_id', { run_id: 'run_missing' }, member),
      h.call('runs/get_by_id', { run_id: other }, w.tokens.org_admin),
      h.call('runs/get_by_id', { run_id: mine[1] }, w.tokens.outsider),
    ]);
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 403, 404, 200, 403],
    );
    assert.equal(replies[0]!.body.data.run_id, mine[0]);
    assert.equal(replies[3]!.body.data.run_id, other);
  });
});
