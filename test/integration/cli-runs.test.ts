import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

describe('svc runs (CLI against a real hub and daemon)', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  const env = () => ({ SVC_HUB_URL: h.url, SVC_TOKEN: h.adminToken, SVC_HOME: home.dir });
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, { config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! } });
    await whenConnected(d);
    const greet = agents.write(
      'greet',
      `const inputs = JSON.parse(process.env.SVC_INPUTS);
console.log('hello ' + inputs.who + ' x' + inputs.n);
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ said: inputs.who }));`,
    );
    const boom = agents.write('boom', `console.error('boom'); process.exit(2);`);
    await registerAgent(h, w.orgId, 'greet', greet);
    await registerAgent(h, w.orgId, 'boom', boom);
    await registerTeam(h, w.orgId, 'greeter', [{ name: 'greet', agent: 'greet' }]);
    await registerTeam(h, w.orgId, 'broken', [{ name: 'explode', agent: 'boom' }]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  it('start --watch, get --history, logs, list; watch exits non-zero for a failed run', async () => {
    const started = await runCli(
      ['runs', 'start', 'greeter', '--realm', w.realmId, '--input', 'who=otter', '--input', 'n=3', '--watch'],
      { env: env() },
    );
    assert.equal(started.code, 0, started.stderr);
    const id = /\(([0-9a-f-]{36})\)/.exec(started.stdout)![1]!;
    assert.match(started.stderr, /succeeded/);

    const got = await runCli(['runs', 'get', id, '--history'], { env: env() });
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /state:\s+succeeded/);
    assert.match(got.stdout, /run\.started/);

    const logs = await runCli(['runs', 'logs', id, '--follow'], { env: env() });
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, /\[greet\] hello otter x3/);

    const list = await runCli(['--json', 'runs', 'list', '--realm', w.realmId], { env: env() });
    assert.equal(list.code, 0, list.stderr);
    assert.ok(JSON.parse(list.stdout).data.some((r: { run_id: string }) => r.run_id === id));

    const bad = await runCli(['--json', 'runs', 'start', 'broken', '--realm', w.realmId], { env: env() });
    assert.equal(bad.code, 0, bad.stderr);
    const badId = JSON.parse(bad.stdout).data.run_id;
    const watched = await runCli(['runs', 'watch', badId], { env: env() });
    assert.equal(watched.code, 1);
    assert.match(watched.stderr, /run failed: phase "explode": the agent exited with code 2/);

    const term = await runCli(['runs', 'terminate', badId, '--reason', 'x'], { env: env() });
    assert.equal(term.code, 1);
    assert.match(term.stderr, /already_terminal/);
  });

  it('start takes priority, a concurrency group and deadlines; list --queue shows the start order', async () => {
    const started = await runCli(
      [
        '--json',
        'runs',
        'start',
        'greeter',
        '--realm',
        w.realmId,
        '--priority',
        '7',
        '--concurrency-key',
        'cli-group',
        '--concurrency-limit',
        '2',
        '--queue-timeout',
        '10m',
        '--timeout',
        '2h',
      ],
      { env: env() },
    );
    assert.equal(started.code, 0, started.stderr);
    const run = JSON.parse(started.stdout).data;
    assert.equal(run.priority, 7);
    assert.equal(run.queue_deadline_at - run.started_at, 600_000);
    assert.equal(run.run_deadline_at - run.started_at, 7_200_000);
    const queue = await runCli(['--json', 'runs', 'list', '--queue', '--realm', w.realmId], { env: env() });
    assert.equal(queue.code, 0, queue.stderr);
    const rows = JSON.parse(queue.stdout).data as { state: string; queue_position: number }[];
    assert.ok(rows.every((r, i) => r.state === 'queued' && r.queue_position === i + 1));
    const table = await runCli(['runs', 'list', '--queue', '--realm', w.realmId], { env: env() });
    assert.match(table.stdout, /WAITING FOR|No queued runs/);
    const bad = await runCli(['runs', 'start', 'greeter', '--realm', w.realmId, '--timeout', '5x'], {
      env: env(),
    });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /"5x" is not a duration/);
  });
});

describe('svc runs watch of a run that is lost', () => {
  let h: TestHub;
  let w: World;
  const home = daemonHome();
  const agents = agentDir();
  after(async () => {
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  it('ends, and exits non-zero, when the run is lost', async () => {
    h = await startTestHub({ config: { runSweepMs: 100 } });
    w = await buildWorld(h);
    await h.ok('settings/set', { key: 'runs.lease_ms', value: '600' });
    const d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
    });
    await whenConnected(d);
    await registerAgent(h, w.orgId, 'sleeper', agents.write('sleeper', 'setInterval(() => {}, 1000);'));
    await registerTeam(h, w.orgId, 'sleepy', [{ name: 'sleep', agent: 'sleeper' }]);
    const runId = (await h.ok('runs/new', { realm_id: w.realmId, team: 'sleepy' })).data.run_id;
    await waitForRun(h, runId, (r) => r.state === 'running' && r.current_pid !== null);
    // The daemon goes away without a word: the run's lease runs out.
    await d.close();
    const env = { SVC_HUB_URL: h.url, SVC_TOKEN: h.adminToken, SVC_HOME: home.dir };
    const watched = await runCli(['runs', 'watch', runId], { env });
    assert.equal(watched.code, 1, watched.stderr);
    assert.match(watched.stdout, /lost/);
  });
});
