import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fakeDaemon } from '../../../test/helpers/fake-daemon.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { markInstalled, registerAgent, registerTeam, waitForRun } from '../../../test/helpers/runs.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';

/**
 * Where a run may go: installs and assignments are the allow-list. A run in a workspace needs its
 * team version installed on the workspace's daemon and its team assigned to the workspace; a run
 * with no workspace is offered only to daemons with its team version installed, and waits queued
 * until one is. The daemons are real tunnels that ack every command.
 */
describe('runs: installs and assignments decide where a run may go', () => {
  let h: TestHub;
  let w: World;
  let a: Awaited<ReturnType<typeof fakeDaemon>>;
  let b: Awaited<ReturnType<typeof fakeDaemon>>;
  let bId: string;
  let tv: { id: string; team_id: string };
  let workspaceId: string;

  before(async () => {
    // No re-dispatch pass: what is offered here is offered by the path under test, not by the pass.
    h = await startTestHub({ config: { runRedispatchMs: 3_600_000 } });
    w = await buildWorld(h);
    const second = await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'other' });
    bId = second.data.daemon_id;
    for (const [token, set] of [
      [w.tokens.realm_token!, (d: typeof a) => (a = d)],
      [second.data.token as string, (d: typeof a) => (b = d)],
    ] as const) {
      const online = once(h.running.hub.tunnel.events, 'connected');
      set(await fakeDaemon(h.url, token));
      await online;
    }
    await registerAgent(h, w.orgId, 'noop', 'noop.js');
    tv = await registerTeam(h, w.orgId, 'hello-team', [{ name: 'only', agent: 'noop' }], { allow: false });
    workspaceId = (await h.ok('workspaces/register', { daemon_id: w.daemonId, path: '/srv/w1', name: 'w1' }))
      .data.id;
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await h?.close();
  });

  /** The team version installed on a daemon of the realm, as a confirmed `teams/install` leaves it. */
  const installed = (daemonId: string, version: { id: string; team_id: string }) =>
    markInstalled(h, { id: daemonId, realm_id: w.realmId }, version);

  it('refuses a run in a workspace whose daemon lacks the team version, naming the install to make', async () => {
    const r = await h.call('runs/new', { workspace_id: workspaceId, team: 'hello-team' });
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.code, 'conflict');
    const name = 'worker';
    assert.equal(
      r.body.error,
      `team hello-team@1.0.0 is not installed on daemon ${name}: run \`svc teams install hello-team@1.0.0 --daemon ${name}\``,
    );
    assert.equal(r.body.details.missing, 'install');
  });

  it('refuses a run in a workspace its team is not assigned to, naming the assignment to make', async () => {
    await h.ok('teams/install', { team_version_id: tv.id, daemon_id: w.daemonId });
    const r = await h.call('runs/new', { workspace_id: workspaceId, team: 'hello-team' });
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(
      r.body.error,
      `team hello-team is not assigned to workspace w1: run \`svc workspaces assign-teams ${workspaceId} hello-team\``,
    );
    assert.equal(r.body.details.missing, 'assignment');
    await h.ok('workspaces/assign_teams', { workspace_id: workspaceId, team_ids: [tv.team_id] });
    const run = (await h.ok('runs/new', { workspace_id: workspaceId, team: 'hello-team' })).data;
    await a.waitFor((c) => c.path === 'runs/execute' && c.body.run_id === run.run_id);
  });

  it('lets a single-agent run in a workspace only where a team using the agent is installed and assigned', async () => {
    await registerAgent(h, w.orgId, 'loner', 'loner.js');
    const refused = await h.call('runs/new', { workspace_id: workspaceId, agent: 'loner' });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.match(
      refused.body.error,
      /^agent loner@1\.0\.0 is not installed on daemon worker: install a team that uses it/,
    );
    // hello-team (installed on worker, assigned to w1) uses noop.
    const run = (await h.ok('runs/new', { workspace_id: workspaceId, agent: 'noop' })).data;
    await a.waitFor((c) => c.path === 'runs/execute' && c.body.run_id === run.run_id);
  });

  it('offers a run with no workspace only to daemons with the team installed', async () => {
    // hello-team is installed on daemon a only.
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'hello-team' })).data;
    const offer = await a.waitFor((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id);
    assert.ok(
      !b.commands.some((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id),
      'a daemon without the install is not offered the run',
    );
    const claim = await h.ok(
      'queue/claim',
      { queue_item_id: offer.body.queue_item_id, daemon_id: w.daemonId },
      w.tokens.realm_token,
    );
    assert.equal(claim.data.claimed, true);
  });

  it('keeps a run with no workspace queued until a daemon has its team, then offers it there', async () => {
    const later = await registerTeam(h, w.orgId, 'later-team', [{ name: 'only', agent: 'noop' }], {
      allow: false,
    });
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'later-team' })).data;
    assert.equal(run.state, 'queued');
    await h.ok('teams/install', { team_version_id: later.id, daemon_id: bId });
    const offer = await b.waitFor((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id);
    assert.ok(!a.commands.some((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id));
    await waitForRun(h, run.run_id, (r) => r.state === 'offered');
    assert.ok(offer.body.queue_item_id);
  });

  it('offers a run still waiting for a claim to the daemons with its team that connect later, together', async () => {
    const solo = await registerTeam(h, w.orgId, 'solo-team', [{ name: 'only', agent: 'noop' }], {
      allow: false,
    });
    const late = await Promise.all(
      ['late-1', 'late-2', 'late-3'].map(
        async (name) => (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name })).data,
      ),
    );
    // Installed (as a confirmed teams/install leaves it) on a and two of the late daemons.
    for (const daemonId of [w.daemonId, late[0].daemon_id, late[1].daemon_id]) {
      await installed(daemonId, solo);
    }
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo-team' })).data;
    const first = await a.waitFor((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id);
    const crowd = await Promise.all(late.map((d) => fakeDaemon(h.url, d.token)));
    try {
      const offers = await Promise.all(
        crowd
          .slice(0, 2)
          .map((d) => d.waitFor((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id)),
      );
      for (const o of offers) assert.equal(o.body.queue_item_id, first.body.queue_item_id);
      const claim = await h.ok(
        'queue/claim',
        { queue_item_id: first.body.queue_item_id, daemon_id: late[1].daemon_id },
        late[1].token,
      );
      assert.equal(claim.data.claimed, true);
      assert.ok(!crowd[2]!.commands.some((c) => c.path === 'offer_job'), 'late-3 lacks the team');
    } finally {
      await Promise.all(crowd.map((d) => d.close()));
    }
  });
  it('offers the queued runs of its realm to a daemon that may take them when it connects', async () => {
    const waiting = await registerTeam(h, w.orgId, 'waiting-team', [{ name: 'only', agent: 'noop' }], {
      allow: false,
    });
    const [bare, able] = await Promise.all(
      ['bare', 'able'].map(
        async (name) => (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name })).data,
      ),
    );
    await installed(able.daemon_id, waiting);
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'waiting-team' })).data;
    assert.equal(run.state, 'queued');
    // A daemon of the realm without the team connects: the run waits on.
    const online = once(h.running.hub.tunnel.events, 'connected');
    const first = await fakeDaemon(h.url, bare.token);
    let second: Awaited<ReturnType<typeof fakeDaemon>> | undefined;
    try {
      await online;
      assert.equal((await h.ok('runs/get_by_id', { run_id: run.run_id })).data.state, 'queued');
      // The one with the team connects: the run is offered to it.
      second = await fakeDaemon(h.url, able.token);
      const offer = await second.waitFor(
        (c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id,
      );
      assert.ok(offer.body.queue_item_id);
      await waitForRun(h, run.run_id, (r) => r.state === 'offered');
      assert.ok(!first.commands.some((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id));
    } finally {
      await Promise.all([first.close(), second?.close()]);
    }
  });
});
