import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { post, type TestHub } from '../../../test/helpers/hub.js';
import { hubWithTeam, registerTeam } from '../../../test/helpers/runs.js';
import { until } from '../../../test/helpers/until.js';
import type { World } from '../../../test/helpers/world.js';
import { CATALOG_CACHE_MS, createCatalogCache } from './catalog-cache.js';

/** A bound for a loaded machine, not the promise (that is CATALOG_CACHE_MS). */
const SEEN_WITHIN_MS = 10 * CATALOG_CACHE_MS;

describe('catalog cache', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    ({ h, w } = await hubWithTeam('build'));
  });
  after(() => h.close());

  /** The team version of a new run of `build`, created through the hub process at `url`. */
  const newRunVersion = async (url: string): Promise<string> => {
    const r = await post(`${url}/v1/runs/new`, { realm_id: w.realmId, team: 'build' }, h.adminToken);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.data.team_version_id;
  };

  it('keeps a team version for its time to live, and reads again after it', async () => {
    let now = 0;
    const cache = createCatalogCache(1_000, () => now);
    const db = h.running.hub.db;
    const first = await cache.teamVersion(db, w.orgId, 'build', null);
    assert.equal(first?.version, '1.0.0');
    assert.ok(Object.isFrozen(first), 'a shared value cannot be changed by a caller');
    // Written through the hub's handle, which carries the hub's own cache's plugin, not this one's.
    await registerTeam(h, w.orgId, 'build', [{ name: 'only', agent: 'noop' }], { version: '1.1.0' });
    now += 999;
    assert.equal((await cache.teamVersion(db, w.orgId, 'build', null))?.version, '1.0.0');
    now += 1;
    assert.equal((await cache.teamVersion(db, w.orgId, 'build', null))?.version, '1.1.0');
    // Through a handle with its plugin, a write clears it at once.
    await db
      .withPlugin(cache.watch)
      .updateTable('team_versions')
      .set({ description: 'changed' })
      .where('org_id', '=', w.orgId)
      .where('name', '=', 'build')
      .execute();
    assert.equal(cache.size(), 0);
    assert.equal((await cache.teamVersion(db, w.orgId, 'build', '1.1.0'))?.description, 'changed');
  });

  it("reads a version in use again through the hub's handle, not the caller's transaction", async () => {
    let now = 0;
    const db = h.running.hub.db;
    const cache = createCatalogCache(
      1_000,
      () => now,
      () => db,
    );
    const setDescription = (description: string) =>
      db
        .updateTable('team_versions')
        .set({ description })
        .where('org_id', '=', w.orgId)
        .where('name', '=', 'build')
        .execute();
    await setDescription('before');
    assert.equal((await cache.teamVersion(db, w.orgId, 'build', '1.0.0'))?.description, 'before');
    // Written through the hub's handle, which carries the hub's own cache's plugin, not this one's.
    await setDescription('after');
    now = 600;
    // Asked inside a transaction that ends before the renewal's read: answered at once, as kept.
    const inTx = await db.transaction().execute((trx) => cache.teamVersion(trx, w.orgId, 'build', '1.0.0'));
    assert.equal(inTx?.description, 'before');
    await until(
      'the renewal read the new description',
      async () => (await cache.teamVersion(db, w.orgId, 'build', '1.0.0'))?.description === 'after',
      SEEN_WITHIN_MS,
    );
    assert.ok(now < 1_000, 'renewed before the kept answer ran out');
  });

  it('does not keep what a read found when the cache was cleared while it ran', async () => {
    const cache = createCatalogCache();
    const reading = cache.teamVersion(h.running.hub.db, w.orgId, 'build', null);
    cache.clear();
    assert.ok(await reading);
    assert.equal(cache.size(), 0);
    await cache.teamVersion(h.running.hub.db, w.orgId, 'build', null);
    assert.equal(cache.size(), 1);
  });

  it("keeps a run's definition and its agents' manifests until an agent is registered again", async () => {
    const { catalog, db } = h.running.hub;
    const tv = await catalog.teamVersion(db, w.orgId, 'build', '1.0.0');
    const team = await catalog.definition(db, w.orgId, { team_version_id: tv!.id, agent_id: null });
    assert.deepEqual(
      team.phases.map((p) => p.name),
      ['only'],
    );
    const agentId = team.phases[0]!.agent_id!;
    const before = await catalog.manifests(db, w.orgId, [agentId]);
    assert.deepEqual(before[agentId]!.command, [process.execPath, 'noop.js']);
    assert.equal(await catalog.manifests(db, w.orgId, [agentId]), before, 'answered from the cache');
    await h.ok('agents/register', {
      org_id: w.orgId,
      force: true,
      manifest: {
        name: 'noop',
        version: '1.0.0',
        agent_type: 'exec',
        command: [process.execPath, 'other.js'],
      },
    });
    assert.deepEqual((await catalog.manifests(db, w.orgId, [agentId]))[agentId]!.command, [
      process.execPath,
      'other.js',
    ]);
    // Another organization's agent is never answered, cached or not.
    const other = await h.ok('orgs/new', { slug: 'catalog-other', owner: { email: 'o@catalog.test' } });
    assert.deepEqual(await catalog.manifests(db, other.data.org.id, [agentId]), {});
  });

  it('a team version registered through this process is the next run’s, at once', async () => {
    await registerTeam(h, w.orgId, 'build', [{ name: 'only', agent: 'noop' }], { version: '2.0.0' });
    const v2 = (await h.running.hub.catalog.teamVersion(h.running.hub.db, w.orgId, 'build', '2.0.0'))!.id;
    assert.equal(await newRunVersion(h.url), v2);
  });

  it("another hub process's registration is seen within a second", async () => {
    // SQLite has one hub process: a second hub on the same file, with its own caches, stands for it.
    const other = await h.startAnother();
    try {
      const current = await newRunVersion(other.url); // the other process caches the newest version
      await registerTeam(h, w.orgId, 'build', [{ name: 'only', agent: 'noop' }], { version: '3.0.0' });
      const v3 = (await h.running.hub.catalog.teamVersion(h.running.hub.db, w.orgId, 'build', '3.0.0'))!.id;
      assert.notEqual(current, v3);
      await until(
        'the other process runs the new version',
        async () => (await newRunVersion(other.url)) === v3,
        SEEN_WITHIN_MS,
      );
    } finally {
      await other.close();
    }
  });
});
