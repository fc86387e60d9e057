import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { killChildren, runCli, startCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * The CLI as a daily tool, run as a real process against a real hub and daemon: runs, teams and
 * workspaces by name, names beside ids, log times and attempts, `runs watch` and reviews, errors
 * that name what exists nearby, and `--json` errors.
 */
describe('svc with names (CLI against a real hub and daemon)', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  // A realm operator sees one organization, so `default` is found without --org.
  const env = () => ({ SVC_HUB_URL: h.url, SVC_TOKEN: w.tokens.realm_operator!, SVC_HOME: home.dir });
  const svc = (...args: string[]) => runCli(args, { env: env() });
  const CLOCK = String.raw`\d\d:\d\d:\d\d\.\d{3}`;

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    const hello = agents.write('hello', `console.log('hello ' + JSON.parse(process.env.SVC_INPUTS).who);`);
    // Fails its first attempt and succeeds when resumed (the marker file remembers).
    const flaky = agents.write(
      'flaky',
      `const fs = require('fs'); const m = ${JSON.stringify(path.join(agents.dir, 'flaky.mark'))};
if (!fs.existsSync(m)) { fs.writeFileSync(m, ''); console.log('first try'); process.exit(1); }
console.log('second try');`,
    );
    const writer = agents.write(
      'writer',
      `require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ summary: 'A draft about otters' }));`,
    );
    await registerAgent(h, w.orgId, 'hello', hello);
    await registerAgent(h, w.orgId, 'flaky', flaky);
    await registerAgent(h, w.orgId, 'writer', writer);
    await registerTeam(h, w.orgId, 'hello-team', [{ name: 'greet', agent: 'hello' }]);
    await h.ok('teams/register', {
      org_id: w.orgId,
      definition: { name: 'hello-team', version: '1.1.0', phases: [{ name: 'greet', agent: 'hello' }] },
    });
    await registerTeam(h, w.orgId, 'flaky-team', [{ name: 'try', agent: 'flaky' }]);
    await registerTeam(h, w.orgId, 'reviewed', [{ name: 'draft', agent: 'writer', review: true }]);
  });
  after(async () => {
    await killChildren();
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  it('runs get, list and logs by name; names beside ids; log times', async () => {
    const started = await svc('runs', 'start', 'hello-team', '--input', 'who=otter', '--watch');
    assert.equal(started.code, 0, started.stderr);
    assert.match(started.stdout, /Started run hello-team-1 /);
    // --watch prints the log lines with their time as they come.
    assert.match(started.stderr, new RegExp(`^${CLOCK} {2}\\[greet\\] hello otter$`, 'm'));

    const got = await svc('runs', 'get', 'hello-team-1', '--history');
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^team:\s+hello-team@1\.1\.0 \([0-9a-f]{8}\)$/m);
    assert.match(got.stdout, /^realm:\s+default \([0-9a-f]{8}\)$/m);
    assert.match(got.stdout, /^daemon:\s+worker \([0-9a-f]{8}\)$/m);
    assert.match(got.stdout, /^running time:\s+ran \d+\.\d s over 1 attempt$/m);
    assert.match(got.stdout, /run\.started.* by daemon worker$/m);

    const logs = await svc('runs', 'logs', 'hello-team-1');
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, new RegExp(`^${CLOCK} {2}\\[greet\\] hello otter\\n$`));
    const utc = await svc('runs', 'logs', 'hello-team-1', '--utc');
    assert.match(utc.stdout, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z {2}\[greet\] hello otter$/m);
    const raw = await svc('--json', 'runs', 'logs', 'hello-team-1');
    assert.equal(JSON.parse(raw.stdout.trim()).text, 'hello otter');

    // --team takes the team's name (every version), or name@version.
    const list = await svc('runs', 'list', '--team', 'hello-team');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^\S+\s+hello-team-1\s+hello-team@1\.1\.0\s+succeeded/m);
    const older = await svc('runs', 'list', '--team', 'hello-team@1.0.0');
    assert.equal(older.stdout, 'No runs.\n');
    const typo = await svc('runs', 'list', '--team', 'helo-team');
    assert.equal(typo.code, 1);
    assert.equal(typo.stderr, 'error: not_found: team "helo-team" not found; did you mean hello-team?\n');
    const noVersion = await svc('runs', 'list', '--team', 'hello-team@3.0.0');
    assert.equal(noVersion.code, 1);
    assert.match(noVersion.stderr, /team hello-team has no version 3\.0\.0; versions: 1\.0\.0, 1\.1\.0/);
    const startTypo = await svc('runs', 'start', 'helo-team');
    assert.match(startTypo.stderr, /not_found: team "helo-team" not found; did you mean hello-team\?/);
    const agentTypo = await svc('runs', 'start', '--agent', 'helo');
    assert.match(agentTypo.stderr, /not_found: agent "helo" not found; did you mean hello\?/);
  });

  it('an ambiguous run name lists the candidates; an unknown one suggests near names', async () => {
    const a = await svc('--json', 'runs', 'start', 'hello-team', '--name', 'twin', '--input', 'who=a');
    const b = await svc('--json', 'runs', 'start', 'hello-team', '--name', 'twin', '--input', 'who=b');
    const ids = [a, b].map((r) => JSON.parse(r.stdout).data.run_id as string);
    const got = await svc('runs', 'get', 'twin');
    assert.equal(got.code, 2);
    assert.match(got.stderr, /^error: run "twin" is ambiguous: .*; give its id\n$/);
    for (const id of ids) assert.ok(got.stderr.includes(id), got.stderr);

    const near = await svc('runs', 'get', 'twn');
    assert.equal(near.code, 1);
    assert.match(near.stderr, /not_found: run "twn" not found; did you mean twin\?/);
  });

  it('--json errors are the API error object on stderr, with the exit code', async () => {
    const client = await svc('--json', 'runs', 'get', 'no-such-run');
    assert.equal(client.code, 1);
    assert.equal(client.stdout, '');
    const e = JSON.parse(client.stderr);
    assert.equal(e.ok, false);
    assert.equal(e.error.code, 'not_found');
    assert.match(e.error.message, /run "no-such-run" not found/);

    // The hub's reply as it came.
    const hub = await svc('--json', 'runs', 'get', '00000000-0000-4000-8000-000000000000');
    assert.equal(hub.code, 1);
    assert.deepEqual(Object.keys(JSON.parse(hub.stderr).error).sort(), ['code', 'message']);
    assert.equal(JSON.parse(hub.stderr).error.code, 'not_found');

    const ambiguous = await svc('--json', 'runs', 'get', 'twin');
    assert.equal(ambiguous.code, 2);
    assert.equal(JSON.parse(ambiguous.stderr).error.code, 'ambiguous');

    const badToken = await runCli(['runs', 'list'], {
      env: { SVC_HUB_URL: h.url, SVC_TOKEN: 'svc_tok_mistyped', SVC_HOME: home.dir },
    });
    assert.equal(badToken.code, 1);
    assert.match(badToken.stderr, /^error: unauthorized: your sign-in is no longer valid: run `svc login`/);
    const badJson = await runCli(['--json', 'runs', 'list', '--realm', w.realmId], {
      env: { SVC_HUB_URL: h.url, SVC_TOKEN: 'svc_tok_mistyped', SVC_HOME: home.dir },
    });
    assert.equal(badJson.code, 1);
    assert.equal(JSON.parse(badJson.stderr).error.code, 'unauthorized');
  });

  it('a resumed run: logs mark each attempt, get counts the running time of both', async () => {
    const first = await svc('--json', 'runs', 'start', 'flaky-team', '--watch');
    assert.equal(first.code, 1);
    assert.equal(JSON.parse(first.stdout).data.run_name, 'flaky-team-1');
    assert.equal(JSON.parse(first.stderr).error.code, 'run_failed');
    const resumed = await svc('runs', 'resume', 'flaky-team-1');
    assert.equal(resumed.code, 0, resumed.stderr);
    const watched = await svc('runs', 'watch', 'flaky-team-1');
    assert.equal(watched.code, 0, watched.stderr);
    // The watch began after the first attempt: its lines come first, then the marker.
    assert.match(watched.stdout, /\[try\] first try\n── attempt 2 ──\n\S+ {2}\[try\] second try\n/);

    const logs = await svc('runs', 'logs', 'flaky-team-1');
    assert.match(
      logs.stdout,
      new RegExp(
        `^── attempt 1 ──\\n${CLOCK} {2}\\[try\\] first try\\n── attempt 2 ──\\n${CLOCK} {2}\\[try\\] second try\\n$`,
      ),
    );
    const got = await svc('runs', 'get', 'flaky-team-1');
    assert.match(got.stdout, /^running time:\s+ran \d+\.\d s over 2 attempts$/m);
  });

  it('runs watch prints an opened review, its summary and the commands that decide it', async () => {
    const started = await svc('runs', 'start', 'reviewed');
    assert.equal(started.code, 0, started.stderr);
    const watch = startCli(['runs', 'watch', 'reviewed-1'], { env: env() });
    const [, reviewId] = await watch.waitFor(/^ {2}approve: {2}svc reviews approve (\S+)$/m, 20_000);
    const out = watch.stdout();
    assert.match(
      out,
      new RegExp(`^review ${reviewId} opened on phase draft \\(round 1\\):\\n {4}A draft about otters$`, 'm'),
    );
    assert.ok(out.includes(`  reject:   svc reviews reject ${reviewId} --message "why"`), out);
    const listed = await svc('--json', 'reviews', 'list', '--run', 'reviewed-1');
    assert.deepEqual(
      JSON.parse(listed.stdout).data.map((r: { id: string }) => r.id),
      [reviewId],
    );
    const approved = await runCli(['reviews', 'approve', reviewId!], { env: env() });
    assert.equal(approved.code, 0, approved.stderr);
    await watch.waitFor(/• reviewed-1: succeeded/);
    // The watch ends by itself once the run has; its exit code says the run succeeded.
    const code =
      watch.child.exitCode ??
      (await new Promise<number | null>((r) => watch.child.once('exit', (c) => r(c))));
    assert.equal(code, 0, watch.stderr());
  });
});
