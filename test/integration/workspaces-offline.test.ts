import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { registerTeam } from '../helpers/runs.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { call, daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/** Workspaces registered while their daemon is offline, checked by a real daemon started later. */
describe('workspaces of an offline daemon', () => {
  let h: TestHub;
  let w: World;
  let daemonId: string;
  let token: string;
  let d: RunningDaemon | undefined;
  const home = daemonHome();
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-ws-offline-'));
  const usable = path.join(scratch, 'usable');
  const missing = path.join(scratch, 'missing');
  const ids: Record<string, string> = {};

  const get = async (id: string) => (await h.ok('workspaces/get', { id })).data;
  const startDaemon = async () => {
    d = await startTestDaemon(home.dir, { config: { hubUrls: [h.url], realmToken: token } });
    await whenConnected(d);
  };
  const stopDaemon = async () => {
    await d?.close();
    d = undefined;
    await until(
      'the daemon to be offline',
      async () => (await h.ok('daemons/get', { id: daemonId })).data.status === 'offline',
    );
  };

  before(async () => {
    mkdirSync(usable);
    h = await startTestHub();
    w = await buildWorld(h);
    await h.ok('agents/register', {
      org_id: w.orgId,
      manifest: { name: 'echo', version: '1.0.0', command: ['true'] },
    });
    const dt = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'laptop' });
    daemonId = dt.data.daemon_id;
    token = dt.data.token;
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('registers as pending (202) and refuses runs and team assignment until its daemon checked it', async () => {
    for (const [key, p] of [
      ['usable', usable],
      ['missing', missing],
    ] as const) {
      const r = await h.call('workspaces/register', { daemon_id: daemonId, path: p });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      assert.equal(r.body.data.status, 'pending');
      assert.equal(r.body.data.error, null);
      assert.equal(r.body.data.path, p);
      ids[key] = r.body.data.id;
    }
    const list = await h.ok('workspaces/list', { daemon_id: daemonId });
    assert.deepEqual(
      list.data.map((x: { status: string }) => x.status),
      ['pending', 'pending'],
    );
    const again = await h.call('workspaces/register', { daemon_id: daemonId, path: usable, name: 'renamed' });
    assert.equal(again.status, 202);
    assert.equal(again.body.data.id, ids.usable);
    const run = await h.call('runs/new', { workspace_id: ids.usable, agent: 'echo' });
    assert.equal(run.status, 409);
    assert.equal(run.body.code, 'conflict');
    assert.match(run.body.error, /is pending/);
    const assign = await h.call('workspaces/assign_teams', { workspace_id: ids.usable, team_ids: [] });
    assert.equal(assign.status, 409);
  });

  it('a daemon started later checks them: a usable path becomes ready, a missing one failed with its error', async () => {
    await startDaemon();
    const checked = (id: string) => async () => {
      const x = await get(id);
      return x.status !== 'pending' && x;
    };
    const ready = await until('the usable workspace', checked(ids.usable!));
    assert.equal(ready.status, 'ready');
    assert.equal(ready.error, null);
    assert.equal(ready.name, 'renamed');
    const failed = await until('the missing workspace', checked(ids.missing!));
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error.code, 'WORKSPACE_INVALID');
    assert.equal(failed.error.message, `${missing}: no such directory`);
    const local = await call(d!.url, 'workspaces/list', {});
    assert.deepEqual(
      local.body.data.workspaces.map((x: { path: string }) => x.path),
      [usable],
    );
    const run = await h.call('runs/new', { workspace_id: ids.missing, agent: 'echo' });
    assert.equal(run.status, 409);
    assert.match(run.body.error, /failed: .*no such directory/);
    // A single-agent run needs a team using the agent installed on the daemon and assigned here.
    await registerTeam(h, w.orgId, 'echo-team', [{ name: 'only', agent: 'echo' }]);
    const ok = await h.call('runs/new', { workspace_id: ids.usable, agent: 'echo' });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  it('registering a failed path again once it exists makes it ready', async () => {
    mkdirSync(missing);
    const r = await h.call('workspaces/register', { daemon_id: daemonId, path: missing });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.id, ids.missing);
    assert.equal(r.body.data.status, 'ready');
    assert.equal(r.body.data.error, null);
  });

  it('removing a pending workspace withdraws it: its daemon never gets it', async () => {
    await stopDaemon();
    const gone = path.join(scratch, 'gone');
    const later = path.join(scratch, 'later');
    mkdirSync(gone);
    mkdirSync(later);
    const pending = await h.ok('workspaces/register', { daemon_id: daemonId, path: gone });
    assert.deepEqual(await h.ok('workspaces/remove', { id: pending.data.id }), { ok: true, removed: true });
    const sentinel = await h.ok('workspaces/register', { daemon_id: daemonId, path: later });
    await startDaemon();
    await until('the later workspace', async () => (await get(sentinel.data.id)).status === 'ready');
    const local = await call(d!.url, 'workspaces/list', {});
    const paths = local.body.data.workspaces.map((x: { path: string }) => x.path);
    assert.ok(paths.includes(later));
    assert.ok(!paths.includes(gone));
  });
});
