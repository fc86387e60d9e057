import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam } from '../../../test/helpers/runs.js';
import type { World } from '../../../test/helpers/world.js';

describe('default run names', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    ({ h, w } = await hubWithTeam('named'));
  });
  after(() => h.close());

  it('number the runs of a team in a realm 1, 2, 3…, distinct when started at once', async () => {
    const names = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const r = await h.ok('runs/new', { realm_id: w.realmId, team: 'named' });
        return r.data.run_name as string;
      }),
    );
    assert.deepEqual(
      names.sort((a, b) => Number(a.split('-').at(-1)) - Number(b.split('-').at(-1))),
      Array.from({ length: 12 }, (_, i) => `named-${i + 1}`),
    );
    const other = await h.ok('realms/new', { org_id: w.orgId, name: 'numbers' });
    const first = await h.ok('runs/new', { realm_id: other.data.id, team: 'named' });
    assert.equal(first.data.run_name, 'named-1');
    const agent = await h.ok('runs/new', { realm_id: w.realmId, agent: 'noop' });
    assert.equal(agent.data.run_name, 'noop-1');
  });
});
