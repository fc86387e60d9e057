import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, waitForRun } from '../helpers/runs.js';
import { agentAlive, maxConcurrent, shStampAgent, spans, writeShStamp } from '../helpers/stamps.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Slots held by a real `svc daemon` process that stops answering. Frozen (SIGSTOP, by its own
 * agent once the hub shows the run running, well before the deadline) past a run's `timeout_ms`, the run is `terminated` with `run_timeout`, its cancel never confirmed; resumed,
 * the daemon stops that run's agent. Killed (SIGKILL), its runs end `lost` when their lease
 * expires. Either way the group's waiting runs then start on a daemon that is alive (an in-process
 * one, which alone has their team installed). Leases are short so that this takes seconds.
 */
describe('a daemon process that freezes or dies frees its runs’ slots', () => {
  let h: TestHub;
  let w: World;
  let alive: RunningDaemon;
  let victim: LongRunning;
  const agents = agentDir();
  const homes = [daemonHome(), daemonHome()];
  const dir = path.join(agents.dir, 'stamps');
  const script = writeShStamp(agents.dir);

  /** A team of one /bin/sh agent stamping into `dir`, installed on `daemonId` only. */
  const stampTeam = async (
    name: string,
    daemonId: string,
    opts: { hold?: boolean; freezeDaemon?: boolean } = {},
  ) => {
    await h.ok('agents/register', { org_id: w.orgId, manifest: shStampAgent(name, script, dir, opts) });
    const team = (
      await h.ok('teams/register', {
        org_id: w.orgId,
        definition: { name, version: '1.0.0', phases: [{ name: 'work', agent: name }] },
      })
    ).data;
    const installed = await h.ok('teams/install', { team_version_id: team.id, daemon_id: daemonId });
    assert.equal(installed.data.status, 'installed');
  };
  /** A run of `team` in the group `key` of `limit` slots. */
  const start = async (team: string, key: string, limit: number, more: Record<string, unknown> = {}) =>
    (
      await h.ok('runs/new', {
        realm_id: w.realmId,
        team,
        concurrency_key: key,
        concurrency_limit: limit,
        ...more,
      })
    ).data;
  const stampOf = (runId: string) => spans(dir).find((x) => x.run === runId);

  before(async () => {
    mkdirSync(dir);
    h = await startTestHub({ config: { runRedispatchMs: 250, runSweepMs: 100 } });
    w = await buildWorld(h);
    alive = await startTestDaemon(homes[0]!.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(alive);
    const dt = (await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: 'victim' })).data;
    victim = startCli(['daemon'], {
      env: {
        SVC_DAEMON_HOME: homes[1]!.dir,
        SVC_DAEMON_PORT: '0',
        SVC_HUB_URL: h.url,
        SVC_REALM_TOKEN: dt.token,
        SVC_LOG_LEVEL: 'info',
      },
    });
    await victim.waitFor(/"msg":"connected to the hub"/);
    writeFileSync(path.join(dir, 'daemon.pid'), String(victim.child.pid));
    // Runs of `on-victim` and `freezing` can only go to the process, runs of `elsewhere` only to
    // the live daemon.
    await stampTeam('on-victim', dt.daemon_id, { hold: true });
    await stampTeam('freezing', dt.daemon_id, { freezeDaemon: true });
    await stampTeam('elsewhere', w.daemonId);
  });
  after(async () => {
    // Agents still waiting (after a failed test) let go.
    writeFileSync(path.join(dir, 'release'), '');
    victim?.child.kill('SIGCONT');
    await victim?.stop('SIGTERM');
    assert.equal(await killChildren(), 0);
    await alive?.close();
    await h?.close();
    for (const home of homes) home.cleanup();
    agents.cleanup();
  });

  it('SIGSTOP past timeout_ms: the run is terminated with run_timeout, its slot goes on', async () => {
    // The lease (3.5 s from its start) outlasts the deadline (2.5 s from its creation): the
    // deadline's cancel reaches a daemon that cannot answer, whose lease then runs out.
    await h.ok('settings/set', { key: 'runs.lease_ms', value: '3500' });
    // Its agent stops its daemon (SIGSTOP) as it starts. The socket stays open, so the hub still
    // sees the daemon online: only the deadline and the lease speak.
    const slow = await start('freezing', 'frozen', 1, { timeout_ms: 2500 });
    const next = await start('elsewhere', 'frozen', 1);
    assert.equal(next.state, 'queued');
    try {
      await waitForRun(h, slow.run_id, (r) => r.state === 'running', 2000);
      writeFileSync(path.join(dir, `${slow.run_id}.freeze`), '');
      const done = await waitForRun(h, slow.run_id, ended, 15_000);
      assert.equal(done.state, 'terminated');
      assert.equal(done.error, 'run_timeout');
      assert.equal(done.force_terminate.terminated_reason, 'run_timeout');
      const types = done.history.map((e: { type: string }) => e.type);
      assert.ok(types.includes('run.started'), `it ran: ${types}`);
      assert.ok(types.includes('run.cancel_requested'), `the deadline asked its daemon first: ${types}`);
      assert.ok(!types.includes('run.cancel_acknowledged'), 'the frozen daemon never confirmed');
      assert.ok(!types.includes('run.lost'), 'not lost on the way');
      const after = await waitForRun(h, next.run_id, ended, 15_000);
      assert.equal(after.state, 'succeeded', JSON.stringify(after.error));
      assert.equal(after.daemon_id, w.daemonId);
      assert.equal(
        stampOf(slow.run_id)?.end,
        Number.POSITIVE_INFINITY,
        'its agent outlived the run meanwhile',
      );
    } finally {
      victim.child.kill('SIGCONT');
    }
    // Resumed, the daemon learns the run is over and stops its agent, by its cancel (SIGTERM, the
    // agent stamps its end) or by its lease's refusal (the run is no longer its own: SIGKILL at once,
    // no stamp), whichever reaches it first; the run stays terminated.
    await until('the agent stopped', async () => !agentAlive(dir, slow.run_id), 15_000);
    const still = (await h.ok('runs/get_by_id', { run_id: slow.run_id })).data;
    assert.equal(still.state, 'terminated');
    assert.equal(still.error, 'run_timeout');
  });

  it('SIGKILL: its runs are lost when their lease expires, and the waiting runs start elsewhere', async () => {
    await h.ok('settings/set', { key: 'runs.lease_ms', value: '1000' });
    const held = [await start('on-victim', 'killed', 2), await start('on-victim', 'killed', 2)];
    for (const r of held) await waitForRun(h, r.run_id, (x) => x.state === 'running', 15_000);
    await until('both agents alive', async () => held.every((r) => stampOf(r.run_id)));
    const waiting = [];
    for (let i = 0; i < 3; i++) waiting.push(await start('elsewhere', 'killed', 2));
    for (const r of waiting) {
      assert.equal(r.state, 'queued');
      assert.deepEqual(r.waiting_for, { key: 'concurrency_key', value: 'killed', limit: 2, running: 2 });
    }

    assert.equal(await victim.stop('SIGKILL'), null);
    for (const r of held) {
      const lost = await waitForRun(h, r.run_id, ended, 15_000);
      assert.equal(lost.state, 'lost');
      assert.ok(lost.history.some((e: { type: string }) => e.type === 'run.lost'));
    }
    for (const r of waiting) {
      const done = await waitForRun(h, r.run_id, ended, 15_000);
      assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
      assert.equal(done.daemon_id, w.daemonId, 'it ran on the daemon that is alive');
    }
    // The killed daemon's agents ended with it; the group never ran more than 2 at once.
    const ids = new Set([...held, ...waiting].map((r) => r.run_id));
    const s = spans(dir).filter((x) => ids.has(x.run));
    assert.equal(s.length, 5);
    assert.ok(maxConcurrent(s) <= 2, `at most 2 at once, saw ${maxConcurrent(s)}`);
  });
});
