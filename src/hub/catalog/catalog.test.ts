import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';

const manifest = (name: string, version = '1.0.0') =>
  `name: ${name}\nversion: ${version}\ndescription: Writes a draft\ncommand: ["node", "${name}.js"]\nenv: { LANG: C }\ntimeout_ms: 60000\n`;

describe('catalog: agents', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('registers (201), refuses a duplicate (conflict) and overwrites with force (200)', async () => {
    const t = w.tokens.org_admin;
    const r = await h.call('agents/register', { org_id: w.orgId, manifest: manifest('writer') }, t);
    assert.equal(r.status, 201);
    const a = r.body.data;
    for (const [k, type] of Object.entries({
      id: 'string',
      name: 'string',
      version: 'string',
      description: 'string',
      agent_type: 'string',
      is_system: 'boolean',
      created_at: 'number',
      updated_at: 'number',
    })) {
      assert.equal(typeof a[k], type, k);
    }
    assert.deepEqual(
      [a.name, a.version, a.description, a.agent_type, a.is_system],
      ['writer', '1.0.0', 'Writes a draft', 'exec', false],
    );
    const dup = await h.call('agents/register', { org_id: w.orgId, manifest: manifest('writer') }, t);
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, 'conflict');
    assert.equal(typeof dup.body.error, 'string');
    const forced = await h.call(
      'agents/register',
      { org_id: w.orgId, manifest: manifest('writer'), description: 'Better', force: true },
      t,
    );
    assert.equal(forced.status, 200);
    assert.equal(forced.body.data.id, a.id);
    assert.equal(forced.body.data.description, 'Better');
    assert.ok(forced.body.data.updated_at >= a.updated_at);
  });

  it('accepts a JSON string and an object; request fields override the manifest', async () => {
    const t = w.tokens.org_owner;
    const json = JSON.stringify({ name: 'j', version: '0.1.0', command: ['true'] });
    assert.equal((await h.call('agents/register', { org_id: w.orgId, manifest: json }, t)).status, 201);
    const obj = await h.call(
      'agents/register',
      { org_id: w.orgId, name: 'o', version: '3.0.0', manifest: { name: 'ignored', command: ['true'] } },
      t,
    );
    assert.equal(obj.status, 201);
    assert.deepEqual([obj.body.data.name, obj.body.data.version], ['o', '3.0.0']);
  });

  it('answers bad_request for invalid manifests and invalid_params for wrong field types', async () => {
    const t = w.tokens.org_admin;
    const bad = [
      'version: 1.0.0\ncommand: [a]\n',
      'name: a\nversion: "1"\ncommand: [a, b\nx: 1\n',
      'name: a\n---\nname: b\n',
      'name: a\nversion: "1"\ncommand: 5\n',
    ];
    for (const m of bad) {
      const r = await h.call('agents/register', { org_id: w.orgId, manifest: m }, t);
      assert.equal(r.status, 400, m);
      assert.equal(r.body.code, 'bad_request', m);
    }
    const yaml = await h.call('agents/register', { org_id: w.orgId, manifest: 'name: a\n  b: [\n' }, t);
    assert.match(yaml.body.error, /line \d+/);
    const params: [unknown, string][] = [
      [{ org_id: w.orgId }, 'manifest'],
      [{ org_id: w.orgId, manifest: '' }, 'manifest'],
      [{ org_id: w.orgId, manifest: 42 }, 'manifest'],
      [{ org_id: w.orgId, manifest: manifest('x'), force: 'yes' }, 'force'],
      [{ org_id: w.orgId, manifest: manifest('x'), version: '' }, 'version'],
      [{ org_id: w.orgId, manifest: manifest('x'), name: '' }, 'name'],
      [{ manifest: manifest('x') }, 'org_id'],
    ];
    for (const [body, field] of params) {
      const r = await h.call('agents/register', body, t);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.code, 'invalid_params');
      assert.equal(r.body.details.issues[0].field, field);
    }
    const unknownOrg = await h.call('agents/register', { org_id: 'nope', manifest: manifest('x') }, t);
    assert.equal(unknownOrg.status, 404);
  });

  it('reads a 1 MB manifest and refuses a body that is not UTF-8', async () => {
    const big = `${manifest('big')}notes: "${'x'.repeat(1024 * 1024)}"\n`;
    const r = await h.call('agents/register', { org_id: w.orgId, manifest: big }, w.tokens.org_admin);
    assert.equal(r.status, 201);
    const body = Buffer.concat([
      Buffer.from(`{"org_id":"${w.orgId}","manifest":"name: x`),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}'),
    ]);
    const res = await fetch(`${h.url}/v1/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${w.tokens.org_admin}` },
      body,
    });
    assert.equal(res.status, 400);
    const j = (await res.json()) as { code: string; error: string };
    assert.equal(j.code, 'bad_request');
    assert.match(j.error, /UTF-8/);
  });

  it('permission agents.manage: org owner/admin and site admin; not members, realm roles or realm tokens', async () => {
    let n = 0;
    const expect: [keyof World['tokens'], number][] = [
      ['anonymous', 401],
      ['bad_token', 401],
      ['outsider', 403],
      ['org_member', 403],
      ['realm_member', 403],
      ['realm_operator', 403],
      ['realm_admin', 403],
      ['org_admin', 201],
      ['org_owner', 201],
      ['site_admin', 201],
      ['realm_token', 403],
    ];
    for (const [actor, status] of expect) {
      const r = await h.call(
        'agents/register',
        { org_id: w.orgId, manifest: manifest(`perm${++n}`) },
        w.tokens[actor],
      );
      assert.equal(r.status, status, actor);
    }
  });

  it('at most one registration per (org, name, version) under concurrent requests', async () => {
    const t = w.tokens.org_admin;
    const replies = await Promise.all(
      Array.from({ length: 12 }, () =>
        h.call('agents/register', { org_id: w.orgId, manifest: manifest('racer') }, t),
      ),
    );
    assert.deepEqual(replies.map((r) => r.status).sort(), [201, ...Array(11).fill(409)]);
    const forced = await Promise.all(
      Array.from({ length: 12 }, () =>
        h.call('agents/register', { org_id: w.orgId, manifest: manifest('racer2'), force: true }, t),
      ),
    );
    assert.deepEqual(
      forced.map((r) => r.status).sort(),
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
    );
    const list = await h.ok('agents/list', { org_id: w.orgId, name: 'racer2' }, t);
    assert.equal(list.data.length, 1);
  });

  it('list (newest version first), get by id or name, remove', async () => {
    const t = w.tokens.org_admin;
    for (const v of ['1.2.0', '1.10.0', '0.9.0']) {
      await h.ok('agents/register', { org_id: w.orgId, manifest: manifest('multi', v) }, t);
    }
    const list = await h.ok('agents/list', { org_id: w.orgId, name: 'multi' }, w.tokens.org_member);
    assert.deepEqual(
      list.data.map((a: { version: string }) => a.version),
      ['1.10.0', '1.2.0', '0.9.0'],
    );
    const newest = await h.ok('agents/get', { org_id: w.orgId, name: 'multi' }, w.tokens.org_member);
    assert.equal(newest.data.version, '1.10.0');
    assert.deepEqual(newest.data.manifest.command, ['node', 'multi.js']);
    const pinned = await h.ok('agents/get', { org_id: w.orgId, name: 'multi', version: '0.9.0' }, t);
    const byId = await h.ok('agents/get', { id: pinned.data.id }, t);
    assert.equal(byId.data.version, '0.9.0');
    assert.equal((await h.call('agents/get', { id: 'nope' }, t)).status, 404);
    assert.equal((await h.call('agents/get', { id: pinned.data.id }, w.tokens.outsider)).status, 403);
    assert.equal((await h.call('agents/remove', { id: pinned.data.id }, w.tokens.org_member)).status, 403);
    await h.ok('agents/remove', { id: pinned.data.id }, t);
    assert.equal((await h.call('agents/remove', { id: pinned.data.id }, t)).status, 404);
    const page1 = await h.ok('agents/list', { org_id: w.orgId, limit: 2 }, t);
    assert.equal(page1.data.length, 2);
    const page2 = await h.ok('agents/list', { org_id: w.orgId, limit: 2, cursor: page1.next_cursor }, t);
    assert.notDeepEqual(page2.data[0], page1.data[0]);
  });
});

describe('catalog: teams', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    for (const [n, v] of [
      ['writer', '1.0.0'],
      ['writer', '1.1.0'],
      ['linter', '1.0.0'],
    ]) {
      await h.ok('agents/register', { org_id: w.orgId, manifest: manifest(n!, v) }, w.tokens.org_admin);
    }
  });
  after(() => h.close());

  const team = (name: string, phases: string, version = '1.0.0') =>
    `name: ${name}\nversion: ${version}\nphases:\n${phases}`;

  it('registers a team, pinning agent references to versions', async () => {
    const r = await h.call(
      'teams/register',
      {
        org_id: w.orgId,
        definition: team('lint-team', '  - name: lint\n    agent: linter\n'),
      },
      w.tokens.org_admin,
    );
    assert.equal(r.status, 201);
    const d = r.body.data;
    assert.equal(d.id, d.team_version_id);
    assert.equal(typeof d.team_id, 'string');
    assert.equal(d.definition.phases[0].agent, 'linter@1.0.0');
    const loop = await h.call(
      'teams/register',
      {
        org_id: w.orgId,
        definition: team(
          'review-loop',
          '  - name: draft\n    agent: writer\n    review: true\n  - name: check\n    team: lint-team\n    foreach: inputs.files\n',
        ),
      },
      w.tokens.org_owner,
    );
    assert.equal(loop.status, 201);
    const phases = loop.body.data.definition.phases;
    assert.equal(phases[0].agent, 'writer@1.1.0');
    assert.equal(phases[0].review, true);
    assert.equal(phases[1].team, 'lint-team@1.0.0');
    assert.equal(phases[1].team_version_id, d.team_version_id);
    // A new version keeps the team_id.
    const v2 = await h.ok(
      'teams/register',
      {
        org_id: w.orgId,
        definition: team('lint-team', '  - name: lint\n    agent: linter@1.0.0\n', '2.0.0'),
      },
      w.tokens.org_admin,
    );
    assert.equal(v2.data.team_id, d.team_id);
    assert.notEqual(v2.data.team_version_id, d.team_version_id);
  });

  it('refuses unknown references, cycles, duplicates; force overwrites', async () => {
    const t = w.tokens.org_admin;
    const unknown = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('u', '  - name: a\n    agent: ghost\n') },
      t,
    );
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error, /agent ghost is not registered/);
    const unknownVersion = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('u', '  - name: a\n    agent: writer@9.9.9\n') },
      t,
    );
    assert.match(unknownVersion.body.error, /writer@9.9.9 is not registered/);
    const self = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('selfie', '  - name: a\n    team: selfie\n') },
      t,
    );
    assert.match(self.body.error, /cannot call itself/);
    // a@1 → (nothing); b@1 → a@1; overwrite a@1 to call b@1: a cycle.
    await h.ok(
      'teams/register',
      { org_id: w.orgId, definition: team('ca', '  - name: x\n    agent: writer\n') },
      t,
    );
    await h.ok(
      'teams/register',
      { org_id: w.orgId, definition: team('cb', '  - name: x\n    team: ca@1.0.0\n') },
      t,
    );
    const cycle = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('ca', '  - name: x\n    team: cb\n'), force: true },
      t,
    );
    assert.equal(cycle.status, 400);
    assert.match(cycle.body.error, /cycle: ca@1.0.0 → cb@1.0.0 → ca@1.0.0/);
    const dup = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('ca', '  - name: x\n    agent: writer\n') },
      t,
    );
    assert.equal(dup.status, 409);
    const forced = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('ca', '  - name: y\n    agent: writer\n'), force: true },
      t,
    );
    assert.equal(forced.status, 200);
    const foreachAgent = await h.call(
      'teams/register',
      {
        org_id: w.orgId,
        definition: team('fa', '  - name: x\n    agent: writer\n    foreach: inputs.files\n'),
      },
      t,
    );
    assert.match(foreachAgent.body.error, /foreach is only allowed with team/);
    const perm = await h.call(
      'teams/register',
      { org_id: w.orgId, definition: team('p', '  - name: x\n    agent: writer\n') },
      w.tokens.realm_admin,
    );
    assert.equal(perm.status, 403);
  });

  it('list, get, and remove (refused while another team calls it)', async () => {
    const t = w.tokens.org_admin;
    const list = await h.ok('teams/list', { org_id: w.orgId, name: 'lint-team' }, w.tokens.org_member);
    assert.deepEqual(
      list.data.map((x: { version: string }) => x.version),
      ['2.0.0', '1.0.0'],
    );
    const newest = await h.ok('teams/get', { org_id: w.orgId, name: 'lint-team' }, t);
    assert.equal(newest.data.version, '2.0.0');
    const v1 = list.data[1];
    const inUse = await h.call('teams/remove', { id: v1.id }, t);
    assert.equal(inUse.status, 409);
    assert.match(inUse.body.error, /review-loop/);
    const agentInUse = await h.call('agents/remove', { id: v1.definition.phases[0].agent_id }, t);
    assert.equal(agentInUse.status, 409);
    await h.ok('teams/remove', { id: newest.data.id }, t);
    assert.equal((await h.call('teams/get', { id: newest.data.id }, t)).status, 404);
  });
});
