import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const types = (run: { history: { type: string }[] }) => run.history.map((e) => e.type);

describe('run control: cancel, resume, lost, force-terminate, restart', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon | null = null;
  const home = daemonHome();
  const agents = agentDir();
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-scratch-'));
  const startDaemon = async () => {
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    return d;
  };
  before(async () => {
    h = await startTestHub({ config: { runSweepMs: 100 } });
    w = await buildWorld(h);
    await startDaemon();
    const sleeper = agents.write(
      'sleeper',
      `process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(143); });
console.log('sleeping');
setInterval(() => {}, 1000);`,
    );
    const stubborn = agents.write(
      'stubborn',
      `process.on('SIGTERM', () => { console.log('ignoring SIGTERM'); });
console.log('sleeping');
setInterval(() => {}, 1000);`,
    );
    const counter = agents.write(
      'counter',
      `const fs = require('fs');
const f = ${JSON.stringify(path.join(scratch, 'count'))};
const n = (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0) + 1;
fs.writeFileSync(f, String(n));
fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ n }));`,
    );
    const flaky = agents.write(
      'flaky',
      `const fs = require('fs');
const f = ${JSON.stringify(path.join(scratch, 'fixed'))};
const earlier = JSON.parse(process.env.SVC_PHASE_OUTPUTS);
if (!fs.existsSync(f)) { console.error('not yet'); process.exit(3); }
fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ saw: earlier.count.n }));`,
    );
    const quick = agents.write('quick', `console.log('quick');`);
    await registerAgent(h, w.orgId, 'sleeper', sleeper);
    await registerAgent(h, w.orgId, 'stubborn', stubborn);
    await registerAgent(h, w.orgId, 'counter', counter);
    await registerAgent(h, w.orgId, 'flaky', flaky);
    await registerAgent(h, w.orgId, 'quick', quick, { timeout_ms: 300 });
    await registerAgent(h, w.orgId, 'slowpoke', sleeper, { timeout_ms: 300 });
    await registerTeam(h, w.orgId, 'sleepy', [{ name: 'sleep', agent: 'sleeper' }]);
    await registerTeam(h, w.orgId, 'stubborn-team', [{ name: 'sleep', agent: 'stubborn' }]);
    await registerTeam(h, w.orgId, 'two-step', [
      { name: 'count', agent: 'counter' },
      { name: 'fix', agent: 'flaky' },
    ]);
    await registerTeam(h, w.orgId, 'timeouts', [{ name: 'slow', agent: 'slowpoke' }]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  });

  const start = async (team: string) =>
    (await h.ok('runs/new', { realm_id: w.realmId, team }, w.tokens.realm_member)).data.run_id as string;
  /** Running, and the agent has printed its first line (so its signal handlers are in place). */
  const whenAgentRuns = async (runId: string) => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const logs = await h.ok('runs/logs', { run_id: runId });
      if (logs.data.some((l: { text: string }) => l.text === 'sleeping')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    return waitForRun(h, runId, (r) => r.state === 'running' && r.current_pid !== null);
  };

  it('cancels a long-running agent: requested → acknowledged → cancelled, process gone', async () => {
    const runId = await start('sleepy');
    const running = await whenAgentRuns(runId);
    const pid = running.current_pid as number;
    assert.ok(alive(pid), 'agent alive while running');
    const blocked = await h.call('runs/force_terminate', { run_id: runId, reason: 'too early' });
    assert.equal(blocked.status, 409);
    assert.equal(blocked.body.details.blocker, 'daemon_online_use_cancel');
    const c = await h.call('runs/cancel', { run_id: runId, reason: 'enough' }, w.tokens.realm_operator);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.body.data.pending_control.type, 'cancel');
    assert.equal(c.body.data.pending_control.requested_by, w.users.realm_operator!.id);
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'cancelled');
    assert.equal(done.pending_control, null);
    assert.ok(!alive(pid), 'the agent process is gone');
    const t = types(done);
    assert.ok(t.indexOf('run.cancel_requested') < t.indexOf('run.ended'), t.join(','));
    assert.ok(t.includes('run.cancel_acknowledged'), t.join(','));
    const req = done.history.find((e: { type: string }) => e.type === 'run.cancel_requested');
    assert.equal(req.actor.user_id, w.users.realm_operator!.id);
    const logs = await h.ok('runs/logs', { run_id: runId });
    assert.ok(
      logs.data.some((l: { text: string }) => l.text === 'got SIGTERM'),
      JSON.stringify(logs.data),
    );
  });

  it('kills an agent that ignores SIGTERM after the grace period', async () => {
    const runId = await start('stubborn-team');
    const pid = (await whenAgentRuns(runId)).current_pid as number;
    await h.ok('runs/cancel', { run_id: runId }, w.tokens.realm_operator);
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'cancelled');
    assert.ok(!alive(pid));
  });

  it('fails a phase whose agent times out', async () => {
    const runId = await start('timeouts');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'failed');
    assert.match(done.error, /timed out after 300 ms/);
    assert.equal(done.current_phase, 'slow');
  });

  it('resumes a failed run from its failed phase, keeping earlier outputs', async () => {
    const runId = await start('two-step');
    const failed = await waitForRun(h, runId, ended);
    assert.equal(failed.state, 'failed');
    assert.equal(failed.current_phase, 'fix');
    assert.match(failed.error, /exited with code 3/);
    assert.equal((await h.call('runs/resume', { run_id: runId }, w.tokens.realm_member)).status, 403);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(scratch, 'fixed'), '1');
    const r = await h.call('runs/resume', { run_id: runId }, w.tokens.realm_operator);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const done = await waitForRun(h, runId, (x) => x.state === 'succeeded' || x.state === 'failed');
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    assert.deepEqual(done.outputs.fix, { saw: 1 });
    assert.equal(readFileSync(path.join(scratch, 'count'), 'utf8'), '1', 'the first phase did not run again');
    const t = types(done);
    const i = t.indexOf('run.resume_requested');
    assert.ok(i > 0 && t.indexOf('run.resumed') > i, t.join(','));
    assert.equal(done.history[i].actor.user_id, w.users.realm_operator!.id);
    assert.equal(done.history.at(-1).type, 'run.ended');
  });

  it('a daemon restart reports its interrupted run failed', async () => {
    const runId = await start('sleepy');
    const pid = (await whenAgentRuns(runId)).current_pid as number;
    await d!.close();
    assert.ok(!alive(pid));
    await startDaemon();
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'failed');
    assert.match(done.error, /daemon restarted/);
  });

  it('a run whose daemon dies is lost when its lease expires; then force-terminate is allowed', async () => {
    await h.ok('settings/set', { key: 'runs.lease_ms', value: '600' });
    try {
      const runId = await start('sleepy');
      const pid = (await whenAgentRuns(runId)).current_pid as number;
      // The daemon stops renewing (and its agent dies with it); the hub still sees it online a
      // little while, but the lease runs out.
      await d!.close();
      d = null;
      assert.ok(!alive(pid));
      const lost = await waitForRun(h, runId, (r) => r.state === 'lost');
      assert.equal(typeof lost.state_lost_at, 'number');
      assert.ok(types(lost).includes('run.lost'));
      assert.equal(lost.force_terminate.eligible, true);
      assert.equal(
        (await h.call('runs/force_terminate', { run_id: runId, reason: 'x' }, w.tokens.realm_operator))
          .status,
        403,
      );
      const ft = await h.call(
        'runs/force_terminate',
        { run_id: runId, reason: 'daemon is gone' },
        w.tokens.realm_admin,
      );
      assert.equal(ft.status, 200, JSON.stringify(ft.body));
      const end = ft.body.data;
      assert.equal(end.state, 'terminated');
      assert.equal(end.force_terminate.already_terminated, true);
      assert.equal(end.force_terminate.terminated_by_user_id, w.users.realm_admin!.id);
      assert.equal(end.force_terminate.terminated_reason, 'daemon is gone');
      assert.equal(typeof end.force_terminate.terminated_at, 'number');
      assert.equal(end.force_terminate.eligible, false);
      assert.equal(end.force_terminate.blocker, 'already_terminal');
      // A queued run with no daemon at all is eligible too.
      const queued = await start('sleepy');
      const q = (await h.ok('runs/get_by_id', { run_id: queued })).data;
      assert.equal(q.state, 'queued');
      assert.equal(q.force_terminate.eligible, true);
      assert.equal(q.force_terminate.trigger, 'no_daemon');
      await h.ok('runs/cancel', { run_id: queued }, w.tokens.realm_operator);
      assert.equal((await h.ok('runs/get_by_id', { run_id: queued })).data.state, 'cancelled');
    } finally {
      await h.ok('settings/remove', { key: 'runs.lease_ms' });
    }
    assert.ok(existsSync(home.dir));
  });
});
