import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadInstalledTeam } from '../../src/daemon/catalog/catalog.repo.js';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { daemonsWithTeam } from '../../src/hub/catalog/installs.service.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { until } from '../helpers/until.js';
import { buildWorld, createOrgWithOwner, uniq, type World } from '../helpers/world.js';
import { call, daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/** Team installs and workspaces: a real hub and real daemons over the tunnel. */

const agentYaml = (name: string) =>
  `name: ${name}\nversion: 1.0.0\ncommand: ["node", "${name}.js"]\nenv: { GREETING: hi }\ntimeout_ms: 5000\n`;

describe('catalog on daemons', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  let otherToken: string;
  let otherId: string;
  const homes = [daemonHome(), daemonHome()];
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-ws-'));
  let tvId: string;
  let childTvId: string;
  let teamId: string;
  let otherTeamId: string;

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const t = w.tokens.org_owner;
    for (const a of ['hello', 'lint', 'spare']) {
      await h.ok('agents/register', { org_id: w.orgId, manifest: agentYaml(a) }, t);
    }
    const child = await h.ok(
      'teams/register',
      {
        org_id: w.orgId,
        definition: 'name: lint-team\nversion: 1.0.0\nphases:\n  - name: lint\n    agent: lint\n',
      },
      t,
    );
    childTvId = child.data.id;
    const team = await h.ok(
      'teams/register',
      {
        org_id: w.orgId,
        definition:
          'name: hello-team\nversion: 1.0.0\nphases:\n  - name: greet\n    agent: hello\n  - name: check\n    team: lint-team\n',
      },
      t,
    );
    tvId = team.data.id;
    teamId = team.data.team_id;
    const spare = await h.ok(
      'teams/register',
      {
        org_id: w.orgId,
        definition: 'name: spare-team\nversion: 1.0.0\nphases:\n  - name: s\n    agent: spare\n',
      },
      t,
    );
    otherTeamId = spare.data.team_id;
    const second = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'second' });
    otherToken = second.data.token;
    otherId = second.data.daemon_id;
    d = await startTestDaemon(homes[0]!.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
    });
    await whenConnected(d);
    await until(
      'daemon online',
      async () => (await h.ok('daemons/get', { id: w.daemonId })).data.status === 'online',
    );
  });
  after(async () => {
    await d?.close();
    await h?.close();
    for (const x of homes) x.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('installs a team version on the daemon with every agent manifest it needs, recursively', async () => {
    const r = await h.call(
      'teams/install',
      { team_version_id: tvId, daemon_id: w.daemonId },
      w.tokens.realm_operator,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.status, 'installed');
    assert.equal(r.body.data.install.status, 'installed');
    assert.equal(r.body.data.install.pending, null);
    assert.equal(typeof r.body.data.install.installed_at, 'number');

    const installed = await loadInstalledTeam(d.db, tvId);
    assert.ok(installed);
    assert.equal(installed.name, 'hello-team');
    assert.deepEqual(
      Object.values(installed.agents)
        .map((a) => a.name)
        .sort(),
      ['hello', 'lint'],
    );
    const hello = Object.values(installed.agents).find((a) => a.name === 'hello')!;
    assert.deepEqual(hello.manifest.command, ['node', 'hello.js']);
    assert.deepEqual(hello.manifest.env, { GREETING: 'hi' });
    assert.equal(installed.definition.phases[0]!.agent_id, hello.id);
    assert.deepEqual(Object.keys(installed.teams), [childTvId]);
    // A child team is found through its parent.
    assert.equal((await loadInstalledTeam(d.db, childTvId))?.name, 'lint-team');

    const local = await call(d.url, 'teams/list', {});
    assert.equal(local.status, 200);
    assert.deepEqual(
      local.body.data.teams.map((x: { name: string; agents: string[] }) => [x.name, x.agents.sort()]),
      [['hello-team', ['hello@1.0.0', 'lint@1.0.0']]],
    );
    const list = await h.ok('teams/list_installs', { daemon_id: w.daemonId }, w.tokens.realm_member);
    assert.deepEqual(
      list.data.map((x: { team_version_id: string; status: string }) => [x.team_version_id, x.status]),
      [[tvId, 'installed']],
    );
    const hub = h.running.hub;
    assert.deepEqual(
      (await daemonsWithTeam(hub, w.realmId, { teamVersionId: tvId })).map((x) => [
        x.daemon_id,
        x.daemon_status,
      ]),
      [[w.daemonId, 'online']],
    );
    assert.equal((await daemonsWithTeam(hub, w.realmId, { teamId })).length, 1);
    assert.equal((await daemonsWithTeam(hub, w.otherRealmId, { teamId })).length, 0);
  });

  it('install: operators and above; members, realm tokens and other orgs’ teams are refused', async () => {
    const body = { team_version_id: tvId, daemon_id: w.daemonId };
    assert.equal((await h.call('teams/install', body, w.tokens.realm_member)).status, 403);
    assert.equal((await h.call('teams/install', body, w.tokens.org_member)).status, 403);
    assert.equal((await h.call('teams/install', body, w.tokens.realm_token)).status, 403);
    assert.equal((await h.call('teams/install', body, null)).status, 401);
    const other = await createOrgWithOwner(h, `x-${uniq()}`);
    await h.ok('agents/register', { org_id: other.orgId, manifest: agentYaml('hello') }, other.owner.token);
    const foreign = await h.ok(
      'teams/register',
      {
        org_id: other.orgId,
        definition: 'name: f\nversion: 1.0.0\nphases:\n  - name: a\n    agent: hello\n',
      },
      other.owner.token,
    );
    const r = await h.call('teams/install', { team_version_id: foreign.data.id, daemon_id: w.daemonId });
    assert.equal(r.status, 404);
    assert.equal((await h.call('teams/install', { team_version_id: tvId, daemon_id: 'nope' })).status, 404);
  });

  it('refuses to remove a team version while it is installed', async () => {
    const r = await h.call('teams/remove', { id: tvId }, w.tokens.org_owner);
    assert.equal(r.status, 409);
    assert.match(r.body.error, /installed on 1 daemon/);
  });

  it('an offline daemon gets the install when it connects (status pending until its ack)', async () => {
    const r = await h.ok('teams/install', { team_version_id: childTvId, daemon_id: otherId });
    assert.equal(r.data.status, 'pending');
    assert.equal(r.data.install.status, 'uninstalled');
    assert.equal(r.data.install.pending, 'install');
    assert.equal((await daemonsWithTeam(h.running.hub, w.realmId, { teamVersionId: childTvId })).length, 0);
    const d2 = await startTestDaemon(homes[1]!.dir, { config: { hubUrls: [h.url], realmToken: otherToken } });
    try {
      await whenConnected(d2);
      await until('the install ack', async () => {
        const l = await h.ok('teams/list_installs', { daemon_id: otherId });
        return l.data[0]?.status === 'installed';
      });
      assert.equal((await loadInstalledTeam(d2.db, childTvId))?.name, 'lint-team');
      assert.deepEqual(
        (await daemonsWithTeam(h.running.hub, w.realmId, { teamVersionId: childTvId })).map(
          (x) => x.daemon_id,
        ),
        [otherId],
      );
      const un = await h.ok('teams/uninstall', { team_version_id: childTvId, daemon_id: otherId });
      assert.equal(un.data.status, 'uninstalled');
      assert.equal(await loadInstalledTeam(d2.db, childTvId), null);
    } finally {
      await d2.close();
    }
    await until(
      'daemon offline',
      async () => (await h.ok('daemons/get', { id: otherId })).data.status === 'offline',
    );
  });

  describe('workspaces', () => {
    let dir: string;
    let wsId: string;
    before(() => {
      dir = path.join(scratch, 'project');
      mkdirSync(dir);
      writeFileSync(path.join(scratch, 'file.txt'), 'x');
    });

    it('registers a directory the daemon accepts (201), again (200, same id)', async () => {
      const r = await h.call(
        'workspaces/register',
        { daemon_id: w.daemonId, path: `${dir}/` },
        w.tokens.realm_admin,
      );
      assert.equal(r.status, 201, JSON.stringify(r.body));
      wsId = r.body.data.id;
      assert.deepEqual(
        [
          r.body.data.daemon_id,
          r.body.data.realm_id,
          r.body.data.path,
          r.body.data.name,
          r.body.data.team_ids,
        ],
        [w.daemonId, w.realmId, dir, 'project', []],
      );
      const again = await h.call('workspaces/register', { daemon_id: w.daemonId, path: dir, name: 'proj' });
      assert.equal(again.status, 200);
      assert.equal(again.body.data.id, wsId);
      assert.equal(again.body.data.name, 'proj');
      const local = await call(d.url, 'workspaces/list', {});
      assert.deepEqual(
        local.body.data.workspaces.map((x: { id: string; path: string }) => [x.id, x.path]),
        [[wsId, dir]],
      );
    });

    it('refuses a missing path, a file, a relative path (bad_request from WORKSPACE_INVALID)', async () => {
      for (const [p, why] of [
        [path.join(scratch, 'missing'), /no such directory/],
        [path.join(scratch, 'file.txt'), /not a directory/],
        ['relative/dir', /must be absolute/],
      ] as const) {
        const r = await h.call('workspaces/register', { daemon_id: w.daemonId, path: p });
        assert.equal(r.status, 400, p);
        assert.equal(r.body.code, 'bad_request');
        assert.match(r.body.error, why);
        assert.equal(r.body.details.daemon_error.code, 'WORKSPACE_INVALID');
      }
      const direct = await call(d.url, 'workspaces/register', { path: 'relative' });
      assert.equal(direct.status, 400);
      assert.equal(direct.body.error.code, 'WORKSPACE_INVALID');
      const list = await h.ok('workspaces/list', { daemon_id: w.daemonId });
      assert.equal(list.data.length, 1);
    });

    it('register needs realm admin; list and get need realm member', async () => {
      const body = { daemon_id: w.daemonId, path: dir };
      assert.equal((await h.call('workspaces/register', body, w.tokens.realm_operator)).status, 403);
      assert.equal((await h.call('workspaces/register', body, w.tokens.realm_token)).status, 403);
      const list = await h.ok('workspaces/list', { realm_id: w.realmId }, w.tokens.realm_member);
      assert.deepEqual(
        list.data.map((x: { id: string }) => x.id),
        [wsId],
      );
      assert.equal((await h.ok('workspaces/get', { id: wsId }, w.tokens.realm_member)).data.path, dir);
      assert.equal((await h.call('workspaces/get', { id: wsId }, w.tokens.org_member)).status, 403);
      assert.equal((await h.call('workspaces/get', { id: 'nope' })).status, 404);
      assert.equal((await h.call('workspaces/list', { realm_id: w.realmId }, w.tokens.outsider)).status, 403);
    });

    it('assign_teams: refused while a team is not installed on the daemon, then sent to the daemon', async () => {
      const missing = await h.call('workspaces/assign_teams', {
        workspace_id: wsId,
        team_ids: [teamId, otherTeamId],
      });
      assert.equal(missing.status, 409);
      assert.match(missing.body.error, /not installed on the workspace's daemon: spare-team/);
      assert.deepEqual(missing.body.details.missing_team_ids, [otherTeamId]);
      assert.equal(
        (
          await h.call(
            'workspaces/assign_teams',
            { workspace_id: wsId, team_ids: [teamId] },
            w.tokens.realm_operator,
          )
        ).status,
        403,
      );
      // A team_version_id stands for its team.
      const r = await h.call(
        'workspaces/assign_teams',
        { workspace_id: wsId, team_ids: [tvId] },
        w.tokens.realm_admin,
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.data.team_ids, [teamId]);
      await until('the daemon has the assignment', async () => {
        const l = await call(d.url, 'workspaces/list', {});
        return l.body.data.workspaces[0]?.team_ids?.[0] === teamId;
      });
      const unknown = await h.call('workspaces/assign_teams', { workspace_id: wsId, team_ids: ['nope'] });
      assert.equal(unknown.status, 404);
    });

    it('remove: by id, by daemon_id + path, unknown → removed: false; who may', async () => {
      const add = async (name: string) => {
        const p = path.join(scratch, name);
        mkdirSync(p, { recursive: true });
        return (await h.ok('workspaces/register', { daemon_id: w.daemonId, path: p })).data as {
          id: string;
          path: string;
        };
      };
      const a = await add('a');
      for (const t of [w.tokens.realm_member, w.tokens.realm_operator, w.tokens.outsider]) {
        const r = await h.call('workspaces/remove', { id: a.id }, t);
        assert.equal(r.status, 403);
      }
      assert.equal((await h.call('workspaces/remove', { id: a.id }, otherToken)).status, 403);
      assert.equal(
        (await h.call('workspaces/remove', { daemon_id: w.daemonId, path: a.path }, otherToken)).status,
        403,
      );
      assert.equal((await h.call('workspaces/remove', { id: a.id }, null)).status, 401);
      assert.deepEqual((await h.call('workspaces/remove', { id: a.id }, w.tokens.realm_admin)).body, {
        ok: true,
        removed: true,
      });
      assert.deepEqual((await h.call('workspaces/remove', { id: a.id })).body, { ok: true, removed: false });
      const b = await add('b');
      const byPath = await h.call(
        'workspaces/remove',
        { daemon_id: w.daemonId, path: b.path },
        w.tokens.realm_token,
      );
      assert.deepEqual(byPath.body, { ok: true, removed: true });
      assert.deepEqual((await h.call('workspaces/remove', { daemon_id: w.daemonId, path: b.path })).body, {
        ok: true,
        removed: false,
      });
      assert.deepEqual((await h.call('workspaces/remove', { daemon_id: 'nope', path: '/x' })).body, {
        ok: true,
        removed: false,
      });
      assert.equal((await h.call('workspaces/remove', { path: '/x' })).status, 400);
    });

    it('unregistering on the daemon removes the workspace on the hub too', async () => {
      const p = path.join(scratch, 'c');
      mkdirSync(p);
      const c = await h.ok('workspaces/register', { daemon_id: w.daemonId, path: p });
      const r = await call(d.url, 'workspaces/unregister', { path: p });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.data, { path: p, removed: true, hub_removed: true, hub_error: null });
      assert.equal((await h.call('workspaces/get', { id: c.data.id })).status, 404);
    });
  });

  it('uninstall removes the team from the daemon and the hub record', async () => {
    // The workspace assignment does not pin the install.
    const r = await h.ok(
      'teams/uninstall',
      { team_version_id: tvId, daemon_id: w.daemonId },
      w.tokens.realm_operator,
    );
    assert.equal(r.data.status, 'uninstalled');
    assert.equal(r.data.install.status, 'uninstalled');
    assert.equal(await loadInstalledTeam(d.db, tvId), null);
    assert.equal((await daemonsWithTeam(h.running.hub, w.realmId, { teamVersionId: tvId })).length, 0);
    const again = await h.ok('teams/uninstall', { team_version_id: tvId, daemon_id: w.daemonId });
    assert.equal(again.data.tx_id, null);
    assert.equal(
      (
        await h.call(
          'teams/uninstall',
          { team_version_id: tvId, daemon_id: w.daemonId },
          w.tokens.realm_member,
        )
      ).status,
      403,
    );
    assert.equal((await h.call('teams/remove', { id: tvId }, w.tokens.org_owner)).status, 200);
  });
});
