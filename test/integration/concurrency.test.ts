import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, allowOrgTeams, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { spans } from '../helpers/stamps.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Concurrency groups, priority and deadlines (CONTRACT.md §11) with a real hub, a real daemon and
 * agents as child processes. Each agent writes its own start and end stamps to files; order is
 * measured from those, not from what the hub believes. The 200 runs through a group of limit 3 and
 * the hub killed at random are in concurrency-sigkill.test.ts; daemons killed or frozen in
 * concurrency-daemons.test.ts.
 */

/** Stamps `<dir>/<run>.start` and `.end`; runs `inputs.ms`, or until `inputs.release` exists. */
const STAMP = `const fs = require('fs');
const path = require('path');
const inputs = JSON.parse(process.env.SVC_INPUTS);
const base = path.join(inputs.dir, process.env.SVC_RUN_ID);
fs.writeFileSync(base + '.start', String(Date.now()));
const done = () => { fs.writeFileSync(base + '.end', String(Date.now())); process.exit(inputs.fail ? 1 : 0); };
if (inputs.release) {
  const t = setInterval(() => { if (fs.existsSync(inputs.release)) { clearInterval(t); done(); } }, 20);
} else setTimeout(done, inputs.ms ?? 0);`;

describe('concurrency groups, priority and deadlines', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  let n = 0;
  /** A fresh directory for the stamps of one test. */
  const stampDir = () => {
    const dir = path.join(agents.dir, `stamps-${++n}`);
    mkdirSync(dir);
    return dir;
  };
  const start = async (body: Record<string, unknown>) =>
    (await h.ok('runs/new', { realm_id: w.realmId, team: 'stamped', ...body })).data;

  before(async () => {
    h = await startTestHub({ config: { runRedispatchMs: 250 } });
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    await registerAgent(h, w.orgId, 'stamp', agents.write('stamp', STAMP));
    await registerTeam(h, w.orgId, 'stamped', [{ name: 'work', agent: 'stamp' }]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  it('shows waiting_for, lists the queue in start order and starts higher priority first', async () => {
    const dir = stampDir();
    const release = path.join(dir, 'release');
    const holder = await start({ inputs: { dir, release }, concurrency_key: 'prio', concurrency_limit: 1 });
    await waitForRun(h, holder.run_id, (r) => r.state === 'running');
    const low = await start({ inputs: { dir }, concurrency_key: 'prio', concurrency_limit: 1, priority: 1 });
    const high = await start({ inputs: { dir }, concurrency_key: 'prio', concurrency_limit: 1, priority: 9 });
    for (const r of [low, high]) {
      assert.equal(r.state, 'queued');
      assert.deepEqual(r.waiting_for, { key: 'concurrency_key', value: 'prio', limit: 1, running: 1 });
    }
    assert.equal(high.priority, 9);
    const queue = await h.ok('runs/list', { realm_id: w.realmId, order: 'queue' });
    const ours = queue.data.filter((r: { run_id: string }) => [low.run_id, high.run_id].includes(r.run_id));
    assert.deepEqual(
      ours.map((r: { run_id: string }) => r.run_id),
      [high.run_id, low.run_id],
    );
    assert.ok(ours[0].queue_position < ours[1].queue_position);
    assert.equal(queue.data[0].queue_position, 1);
    // The re-dispatch pass reads the queue gauges for /metrics.
    const group = `${w.realmId}/concurrency_key/prio`;
    await until('queue gauges', async () => {
      const text = await (await fetch(`${h.url}/metrics`)).text();
      return (
        text.includes(`svc_hub_runs_group_queued{group="${group}"} 2`) &&
        text.includes(`svc_hub_runs_group_slots_used{group="${group}"} 1`) &&
        /svc_hub_run_queue_wait_seconds_count [1-9]/.test(text)
      );
    });
    // The holder ends: the slot goes to the higher priority first.
    writeFileSync(release, '');
    const [h1, l1] = [await waitForRun(h, high.run_id, ended), await waitForRun(h, low.run_id, ended)];
    assert.equal(h1.state, 'succeeded');
    assert.equal(l1.state, 'succeeded');
    const at = new Map(spans(dir).map((x) => [x.run, x]));
    assert.ok(at.get(high.run_id)!.end <= at.get(low.run_id)!.start, 'high ran before low');
  });

  it('frees the slot when a run is cancelled or fails', async () => {
    const dir = stampDir();
    const release = path.join(dir, 'release');
    const group = { concurrency_key: 'frees', concurrency_limit: 1 };
    const holder = await start({ inputs: { dir, release }, ...group });
    await waitForRun(h, holder.run_id, (r) => r.state === 'running');
    const failing = await start({ inputs: { dir, fail: true }, ...group });
    assert.equal(failing.state, 'queued');
    await h.ok('runs/cancel', { run_id: holder.run_id });
    assert.equal((await waitForRun(h, failing.run_id, ended)).state, 'failed');
    const next = await start({ inputs: { dir }, ...group });
    assert.equal((await waitForRun(h, next.run_id, ended)).state, 'succeeded');
  });

  it('fails a run still queued after queue_timeout_ms, cancels one running after timeout_ms', async () => {
    const dir = stampDir();
    const release = path.join(dir, 'release');
    const group = { concurrency_key: 'deadlines', concurrency_limit: 1 };
    // The holder takes the slot as it is offered; its deadline comes long after the waiting
    // run's, however slowly it starts.
    const holder = await start({ inputs: { dir, release }, ...group, timeout_ms: 3000 });
    assert.equal(holder.run_deadline_at - holder.started_at, 3000);
    const waiting = await start({ inputs: { dir }, ...group, queue_timeout_ms: 300 });
    assert.equal(waiting.state, 'queued');
    await waitForRun(h, holder.run_id, (r) => r.state === 'running');
    const timedOut = await waitForRun(h, waiting.run_id, ended);
    assert.equal(timedOut.state, 'failed');
    assert.equal(timedOut.error, 'queue_timeout');
    assert.equal(spans(dir).filter((s) => s.run === waiting.run_id).length, 0, 'it never started');
    const cancelled = await waitForRun(h, holder.run_id, ended);
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(cancelled.error, 'run_timeout');
  });

  it('takes groups and the deadline from the team definition: one slot per distinct input value', async () => {
    const dir = stampDir();
    const release = path.join(dir, 'release');
    await h.ok('teams/register', {
      org_id: w.orgId,
      definition: {
        name: 'per-repo',
        version: '1.0.0',
        concurrency: [{ key: 'inputs.repo.name', limit: 1 }],
        timeout_ms: 600_000,
        phases: [{ name: 'work', agent: 'stamp' }],
      },
    });
    await allowOrgTeams(h, w.orgId);
    const a = await start({ team: 'per-repo', inputs: { dir, release, repo: { name: 'a' } } });
    assert.equal(a.run_deadline_at - a.started_at, 600_000, 'the team definition’s timeout_ms');
    await waitForRun(h, a.run_id, (r) => r.state === 'running');
    const a2 = await start({ team: 'per-repo', inputs: { dir, repo: { name: 'a' } } });
    // runs/new's timeout_ms overrides the team definition's.
    const b = await start({ team: 'per-repo', inputs: { dir, repo: { name: 'b' } }, timeout_ms: 300_000 });
    assert.equal(b.run_deadline_at - b.started_at, 300_000);
    assert.deepEqual(a2.waiting_for, { key: 'inputs.repo.name', value: 'a', limit: 1, running: 1 });
    assert.equal((await waitForRun(h, b.run_id, ended)).state, 'succeeded');
    assert.equal((await h.ok('runs/get_by_id', { run_id: a2.run_id })).data.state, 'queued');
    writeFileSync(release, '');
    assert.equal((await waitForRun(h, a2.run_id, ended)).state, 'succeeded');
  });

  it('refuses bad inputs, naming the field', async () => {
    const field = async (op: string, body: unknown, name: string) => {
      const r = await h.call(op, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      const issues = r.body.details?.issues as { field: string }[];
      assert.ok(
        issues?.some((i) => i.field.includes(name)),
        `${name}: ${JSON.stringify(r.body)}`,
      );
    };
    const base = { realm_id: w.realmId, team: 'stamped' };
    await field('runs/new', { ...base, priority: 10 }, 'priority');
    await field('runs/new', { ...base, concurrency_key: 'k', concurrency_limit: 0 }, 'concurrency_limit');
    await field('runs/new', { ...base, concurrency_limit: 2 }, 'concurrency_limit');
    await field('runs/new', { ...base, queue_timeout_ms: 0 }, 'queue_timeout_ms');
    await field('runs/new', { ...base, timeout_ms: -5 }, 'timeout_ms');
    await field('runs/list', { realm_id: w.realmId, order: 'oldest' }, 'order');
    const team = (concurrency: unknown) => ({
      org_id: w.orgId,
      definition: {
        name: 'bad-group',
        version: '1.0.0',
        concurrency,
        phases: [{ name: 'p', agent: 'stamp' }],
      },
    });
    await field('teams/register', team([{ key: 'machine', limit: 1 }]), 'concurrency');
    await field('teams/register', team([{ key: 'realm', limit: 0 }]), 'concurrency');
    await field('teams/register', team({ key: 'realm' }), 'concurrency');
  });
});
