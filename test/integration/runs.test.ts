import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, allowOrgTeams, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

const RUN_FIELDS = [
  'run_id',
  'workspace_id',
  'team_id',
  'daemon_id',
  'realm_id',
  'parent_run_id',
  'parent_phase',
  'root_run_id',
  'call_path',
  'call_depth',
  'iteration_key',
  'run_name',
  'state',
  'inputs',
  'error',
  'execution_type',
  'current_pid',
  'current_phase',
  'external_id',
  'context_labels',
  'reviewers',
  'notify_channels',
  'lease_expires_at',
  'started_at',
  'completed_at',
  'pending_control',
  'force_terminate',
  'state_lost_at',
  'team_version_id',
];

describe('runs end to end (hub + daemon + agent processes)', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    const writer = agents.write(
      'writer',
      `const fs = require('fs');
const inputs = JSON.parse(process.env.SVC_INPUTS);
console.log('writing about ' + inputs.topic + ' in ' + process.env.SVC_PHASE);
console.error('run ' + process.env.SVC_RUN_ID);
fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ draft: 'A text about ' + inputs.topic }));`,
    );
    const checker = agents.write(
      'checker',
      `const fs = require('fs');
const draft = JSON.parse(process.env.SVC_PHASE_OUTPUTS).draft.draft;
console.log('checked: ' + draft);
fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ ok: true, length: draft.length, cwd: process.cwd() }));`,
    );
    await registerAgent(h, w.orgId, 'writer', writer);
    await registerAgent(h, w.orgId, 'checker', checker);
    await registerTeam(h, w.orgId, 'review-loop', [
      { name: 'draft', agent: 'writer' },
      { name: 'check', agent: 'checker' },
    ]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  it('runs the phases in order, passing outputs on, with logs and history', async () => {
    const created = await h.call(
      'runs/new',
      { realm_id: w.realmId, team: 'review-loop', inputs: { topic: 'otters' }, external_id: 'ext-1' },
      w.tokens.realm_member,
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const run = created.body.data;
    assert.equal(run.state, 'queued');
    assert.equal(run.run_name, 'review-loop-1');
    assert.equal(run.call_depth, 0);
    assert.equal(run.execution_type, 'team');
    for (const f of RUN_FIELDS) assert.ok(f in run, `missing ${f}`);
    assert.deepEqual(Object.keys(run.force_terminate).sort(), [
      'already_terminated',
      'blocker',
      'eligible',
      'terminated_at',
      'terminated_by_user_id',
      'terminated_reason',
      'trigger',
    ]);
    assert.equal(run.history, undefined);

    const done = await waitForRun(h, run.run_id, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    assert.equal(done.outputs.draft.draft, 'A text about otters');
    assert.equal(done.outputs.check.length, 'A text about otters'.length);
    assert.equal(done.daemon_id, d.daemonId());
    assert.equal(typeof done.completed_at, 'number');
    const types = done.history.map((e: { type: string }) => e.type);
    assert.deepEqual(types, [
      'run.queued',
      'run.offered',
      'run.claimed',
      'run.started',
      'phase.started',
      'phase.completed',
      'phase.started',
      'phase.completed',
      'run.ended',
    ]);
    for (const e of done.history) {
      for (const f of ['type', 'at', 'from_phase', 'phase', 'error', 'actor'])
        assert.ok(f in e, `history lacks ${f}`);
    }
    assert.equal(done.history.at(-1).state, 'succeeded');
    const plain = await h.ok('runs/get_by_id', { run_id: run.run_id });
    assert.equal(plain.data.history, undefined);

    const logs = await h.ok('runs/logs', { run_id: run.run_id });
    const texts = logs.data.map((l: { text: string }) => l.text);
    assert.ok(texts.includes('writing about otters in draft'), JSON.stringify(texts));
    assert.ok(texts.includes(`run ${run.run_id}`));
    assert.ok(texts.includes('checked: A text about otters'));
    const page = await h.ok('runs/logs', { run_id: run.run_id, after: logs.data[0].seq });
    assert.equal(page.data.length, logs.data.length - 1);

    const list = await h.ok('runs/list', { realm_id: w.realmId, state: 'succeeded' }, w.tokens.realm_member);
    assert.ok(list.data.some((r: { run_id: string }) => r.run_id === run.run_id));
  });

  it('gives an agent exactly the run inputs, earlier outputs apart, and none of the daemon credentials', async () => {
    // The daemon runs in this process: its environment is this process's.
    const saved = { token: process.env.SVC_REALM_TOKEN, other: process.env.SOME_SECRET };
    process.env.SVC_REALM_TOKEN = w.tokens.realm_token!;
    process.env.SOME_SECRET = `copied ${w.tokens.realm_admin}`;
    try {
      const dumper = agents.write(
        'dumper',
        `const fs = require('fs');
console.log(JSON.stringify(process.env));
fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({
  keys: Object.keys(process.env).sort(),
  inputs: JSON.parse(process.env.SVC_INPUTS),
  phase_inputs: JSON.parse(process.env.SVC_PHASE_INPUTS),
  earlier: JSON.parse(process.env.SVC_PHASE_OUTPUTS),
  url: process.env.SVC_DAEMON_URL,
  greeting: process.env.GREETING,
}));`,
      );
      await registerAgent(h, w.orgId, 'dumper', dumper, { env: { GREETING: 'hi' } });
      await registerTeam(h, w.orgId, 'dump-twice', [
        { name: 'first', agent: 'dumper' },
        { name: 'second', agent: 'dumper', inputs: { mode: 'fast' } },
      ]);
      const inputs = { phases: 'mine', topic: 'otters' };
      const created = await h.ok('runs/new', { realm_id: w.realmId, team: 'dump-twice', inputs });
      const done = await waitForRun(h, created.data.run_id, ended);
      assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
      const { first, second } = done.outputs;
      assert.deepEqual(first.inputs, inputs);
      assert.deepEqual(second.inputs, inputs, 'a run input called phases is the run input');
      assert.deepEqual(first.phase_inputs, {});
      assert.deepEqual(second.phase_inputs, { mode: 'fast' });
      assert.deepEqual(first.earlier, {});
      assert.deepEqual(Object.keys(second.earlier), ['first']);
      assert.equal(first.greeting, 'hi');
      assert.equal(first.url, d.agentUrl);
      assert.ok(!first.keys.includes('SVC_REALM_TOKEN'), first.keys.join(','));
      assert.ok(!first.keys.includes('SOME_SECRET'), first.keys.join(','));
      assert.ok(first.keys.includes('PATH'));
      const logs = await h.ok('runs/logs', { run_id: created.data.run_id });
      const text = JSON.stringify(logs.data);
      assert.ok(logs.data.length >= 2);
      assert.ok(!text.includes(w.tokens.realm_token!), 'the realm token never reaches the logs');
      assert.ok(!text.includes(w.tokens.realm_admin!), 'nor does a token under another name');
    } finally {
      for (const [k, v] of [
        ['SVC_REALM_TOKEN', saved.token],
        ['SOME_SECRET', saved.other],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('fails a phase whose outputs nest deeper than the limit, saying so', async () => {
    const deep = agents.write(
      'deep',
      `require('fs').writeFileSync(process.env.SVC_OUTPUT, '{"a":'.repeat(150) + '1' + '}'.repeat(150));`,
    );
    await registerAgent(h, w.orgId, 'deep', deep);
    await registerTeam(h, w.orgId, 'deep-team', [{ name: 'nest', agent: 'deep' }]);
    const created = await h.ok('runs/new', { realm_id: w.realmId, team: 'deep-team' });
    const done = await waitForRun(h, created.data.run_id, ended);
    assert.equal(done.state, 'failed');
    assert.match(done.error, /SVC_OUTPUT is nested deeper than 100 levels/);
  });

  it('runs in its workspace on the workspace daemon; the realm comes from the workspace', async () => {
    const dir = agents.dir;
    const ws = await h.ok('workspaces/register', { daemon_id: d.daemonId(), path: dir });
    await allowOrgTeams(h, w.orgId);
    const created = await h.ok('runs/new', {
      workspace_id: ws.data.id,
      team: 'review-loop',
      inputs: { topic: 'seals' },
    });
    assert.equal(created.data.realm_id, w.realmId);
    assert.equal(created.data.workspace_id, ws.data.id);
    const done = await waitForRun(h, created.data.run_id, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    assert.equal(done.outputs.check.cwd, dir);
    const t = done.history.map((e: { type: string }) => e.type);
    assert.ok(!t.includes('run.offered'), 'a workspace run is not offered');
    const gone = await h.call('runs/new', { workspace_id: 'nope', team: 'review-loop' });
    assert.equal(gone.status, 404);
  });
});
