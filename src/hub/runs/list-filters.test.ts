import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { registerAgent, registerTeam } from '../../../test/helpers/runs.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';

describe('runs/list filters: a text in the name, who started it, when', () => {
  let h: TestHub;
  let w: World;
  let clock = 1_800_000_000_000;
  const names = (r: { data: { run_name: string }[] }) => r.data.map((x) => x.run_name).sort();

  before(async () => {
    h = await startTestHub({ now: () => clock });
    w = await buildWorld(h);
    await registerAgent(h, w.orgId, 'noop', 'noop.js');
    await registerTeam(h, w.orgId, 'nightly_build', [{ name: 'only', agent: 'noop' }]);
    await registerTeam(h, w.orgId, 'review-docs', [{ name: 'only', agent: 'noop' }]);
    const operator = w.tokens.realm_operator!;
    const start = async (team: string, token: string, run_name?: string) => {
      await h.ok('runs/new', { realm_id: w.realmId, team, ...(run_name ? { run_name } : {}) }, token);
      clock += 60_000;
    };
    await start('nightly_build', h.adminToken);
    await start('nightly_build', operator);
    await start('review-docs', operator);
    await start('review-docs', h.adminToken, '100%_done');
  });
  after(() => h.close());

  const list = (filter: Record<string, unknown>, token = h.adminToken) =>
    h.ok('runs/list', { realm_id: w.realmId, ...filter }, token);

  it('matches a text anywhere in the name, ignoring case, with % and _ taken literally', async () => {
    assert.deepEqual(names(await list({ name_contains: 'BUILD' })), ['nightly_build-1', 'nightly_build-2']);
    assert.deepEqual(names(await list({ name_contains: 'docs-1' })), ['review-docs-1']);
    assert.deepEqual(names(await list({ name_contains: '%' })), ['100%_done']);
    assert.deepEqual(names(await list({ name_contains: '_' })), [
      '100%_done',
      'nightly_build-1',
      'nightly_build-2',
    ]);
    assert.deepEqual(names(await list({ name_contains: 'nothing like it' })), []);
  });

  it('keeps the runs one user started, and shows who started each', async () => {
    const operator = w.users.realm_operator!.id;
    const mine = await list({ created_by_user_id: operator });
    assert.deepEqual(names(mine), ['nightly_build-2', 'review-docs-1']);
    assert.ok(mine.data.every((r: { created_by_user_id: string }) => r.created_by_user_id === operator));
  });

  it('keeps the runs started in a time range, the end excluded', async () => {
    const t0 = 1_800_000_000_000;
    const range = await list({ started_after: t0 + 60_000, started_before: t0 + 180_000 });
    assert.deepEqual(names(range), ['nightly_build-2', 'review-docs-1']);
    assert.deepEqual(names(await list({ started_after: t0 + 180_000, name_contains: 'done' })), [
      '100%_done',
    ]);
  });

  it('refuses a bad filter with the field named', async () => {
    for (const bad of [{ name_contains: '' }, { started_after: -1 }, { started_before: 'today' }]) {
      const r = await h.call('runs/list', { realm_id: w.realmId, ...bad });
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal(r.body.code, 'invalid_params');
      const fields = r.body.details.issues.map((i: { field: string }) => i.field);
      assert.deepEqual(fields, Object.keys(bad));
    }
  });
});
