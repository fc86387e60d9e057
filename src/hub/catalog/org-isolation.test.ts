import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { connectDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import { buildWorld, createOrgWithOwner, type World } from '../../../test/helpers/world.js';

/**
 * Team definitions stay inside their organization: a phase cannot name another organization's rows
 * by id, and even a stored definition that does (older data) never brings that organization's
 * agents or teams into the bodies the hub sends to a daemon.
 */

const SECRET = 'a-org-only-secret-value';

const agent = (name: string, env: Record<string, string> = {}) => ({
  name,
  version: '1.0.0',
  command: ['node', `${name}.js`],
  env,
});

describe('catalog: organization isolation of team definitions', () => {
  let h: TestHub;
  let w: World;
  let other: { agentId: string; teamVersionId: string };
  let daemon: TunnelClient;

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const a = await createOrgWithOwner(h, 'iso-other');
    const secretAgent = await h.ok('agents/register', {
      org_id: a.orgId,
      manifest: agent('secret-agent', { API_KEY: SECRET }),
    });
    const aTeam = await h.ok('teams/register', {
      org_id: a.orgId,
      definition: { name: 'a-team', version: '1.0.0', phases: [{ name: 's', agent: 'secret-agent' }] },
    });
    other = { agentId: secretAgent.data.id, teamVersionId: aTeam.data.id };
    await h.ok('agents/register', { org_id: w.orgId, manifest: agent('writer') });
    daemon = await connectDaemon(h.url, w.tokens.realm_token!);
  });
  after(async () => {
    await daemon?.close();
    await h?.close();
  });

  it('refuses a phase carrying agent_id, team_version_id or any unknown field, naming it', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'p', agent: 'writer', agent_id: other.agentId }, 'agent_id'],
      [{ name: 'p', agent: 'writer', team_version_id: other.teamVersionId }, 'team_version_id'],
      [{ name: 'p', agent: 'writer', colour: 'blue' }, 'colour'],
    ];
    for (const [phase, key] of cases) {
      const r = await h.call(
        'teams/register',
        { org_id: w.orgId, definition: { name: 'smuggler', version: '1.0.0', phases: [phase] } },
        w.tokens.org_admin,
      );
      assert.equal(r.status, 400, key);
      assert.equal(r.body.code, 'bad_request', key);
      assert.match(r.body.error, new RegExp(`unknown field "${key}"`), key);
      assert.equal(r.body.details.issues[0].field, 'definition.phases.0', key);
    }
    const yaml = await h.call(
      'teams/register',
      {
        org_id: w.orgId,
        definition: `name: smuggler\nversion: 1.0.0\nphases:\n  - name: p\n    agent: writer\n    agent_id: ${other.agentId}\n`,
      },
      w.tokens.org_admin,
    );
    assert.equal(yaml.status, 400);
    assert.match(yaml.body.error, /unknown field "agent_id"/);
    const list = await h.ok('teams/list', { org_id: w.orgId, name: 'smuggler' }, w.tokens.org_admin);
    assert.deepEqual(list.data, []);
  });

  it('pins ids only from resolving names in the organization', async () => {
    const writer = await h.ok('agents/get', { org_id: w.orgId, name: 'writer' }, w.tokens.org_admin);
    const t = await h.ok(
      'teams/register',
      {
        org_id: w.orgId,
        definition: { name: 'pinned', version: '1.0.0', phases: [{ name: 'p', agent: 'writer' }] },
      },
      w.tokens.org_admin,
    );
    assert.equal(t.data.definition.phases[0].agent_id, writer.data.id);
    const named = await h.call(
      'teams/register',
      {
        org_id: w.orgId,
        definition: { name: 'reach', version: '1.0.0', phases: [{ name: 'p', team: 'a-team' }] },
      },
      w.tokens.org_admin,
    );
    assert.equal(named.status, 400);
    assert.match(named.body.error, /team a-team is not registered in this organization/);
  });

  it("a stored definition pinning another organization's ids leaks nothing into install or execute bodies", async () => {
    const team = await h.ok(
      'teams/register',
      {
        org_id: w.orgId,
        definition: { name: 'planted', version: '1.0.0', phases: [{ name: 'w', agent: 'writer' }] },
      },
      w.tokens.org_admin,
    );
    // Simulates a row written before phases were checked: ids of the other organization's rows.
    const planted = {
      name: 'planted',
      version: '1.0.0',
      description: '',
      phases: [
        { name: 'w', agent: 'writer@1.0.0', agent_id: other.agentId, review: false },
        { name: 'c', team: 'a-team@1.0.0', team_version_id: other.teamVersionId, review: false },
      ],
    };
    await h.running.hub.db
      .updateTable('team_versions')
      .set({ definition: JSON.stringify(planted) })
      .where('id', '=', team.data.id)
      .execute();

    const installing = h.ok('teams/install', { team_version_id: team.data.id, daemon_id: w.daemonId });
    const install = await daemon.next('command');
    assert.equal(install.path, 'teams/install');
    daemon.ack(install.tx_id, { reply: { installed: true } });
    assert.equal((await installing).data.status, 'installed');
    const bundle = install.body as { agents: { id: string }[]; teams: { id: string }[] };
    assert.deepEqual(bundle.agents, []);
    assert.deepEqual(bundle.teams, []);
    assert.doesNotMatch(JSON.stringify(install.body), new RegExp(SECRET));

    const run = await h.ok('runs/new', { realm_id: w.realmId, team: 'planted' });
    const offer = await daemon.next('command');
    assert.equal(offer.path, 'offer_job');
    daemon.ack(offer.tx_id, { reply: {} });
    const queueItem = (offer.body as { queue_item_id: string }).queue_item_id;
    const claim = await h.ok(
      'queue/claim',
      { queue_item_id: queueItem, daemon_id: w.daemonId },
      w.tokens.realm_token,
    );
    assert.equal(claim.data.claimed, true);
    const execute = await daemon.next('command');
    assert.equal(execute.path, 'runs/execute');
    daemon.ack(execute.tx_id, { reply: {} });
    const body = execute.body as { run_id: string; agents: Record<string, unknown> };
    assert.equal(body.run_id, run.data.run_id);
    assert.deepEqual(body.agents, {});
    assert.doesNotMatch(JSON.stringify(execute.body), new RegExp(SECRET));
  });
});
