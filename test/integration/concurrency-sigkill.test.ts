import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { openDatabase } from '../../src/db/index.js';
import { mintToken } from '../../src/shared/tokens.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { TEST_DB, testDatabase } from '../helpers/db.js';
import { post } from '../helpers/hub.js';
import { maxConcurrent, shStampAgent, spans, startedCount, writeShStamp } from '../helpers/stamps.js';
import { until } from '../helpers/until.js';
import { daemonHome, freePort, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Concurrency groups through real `svc hub` processes: two on one PostgreSQL database, each with a
 * daemon that prefers it; one on SQLite (its single process), with both daemons. 200 runs through
 * a group of limit 3, submitted through every process; then 24 to 30 runs through a group of limit
 * 2 while a process is killed (SIGKILL) at a random moment, three times (each process in turn),
 * and started again. From the agents' own start and end stamps: never more than the limit at once,
 * and every run ends.
 */
const PROCESSES = TEST_DB === 'postgres' ? 2 : 1;

describe(`concurrency groups through ${PROCESSES} hub process(es), killed at random (SIGKILL)`, () => {
  const tdb = testDatabase();
  const svcHome = mkdtempSync(path.join(tmpdir(), 'svc-group-kill-'));
  const stamps = mkdtempSync(path.join(tmpdir(), 'svc-group-stamps-'));
  const homes = [daemonHome(), daemonHome()];
  const adminToken = mintToken('user');
  const urls: string[] = [];
  const hubs: LongRunning[] = [];
  const daemons: RunningDaemon[] = [];
  const daemonIds: string[] = [];
  let env: (port: string) => Record<string, string>;
  let orgId: string;
  let realmId: string;

  const startHubProcess = async (i: number) => {
    const p = startCli(['hub'], { env: env(new URL(urls[i]!).port) });
    hubs[i] = p;
    await p.waitFor(/"msg":"hub ready"/);
  };
  const ok = async (hub: number, op: string, body: unknown) => {
    const r = await post(`${urls[hub]}/v1/${op}`, body, adminToken);
    assert.equal(r.body?.ok, true, `${op} on hub ${hub}: ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  const script = writeShStamp(stamps);
  /** A team of one /bin/sh agent stamping into `dir`, installed on both daemons. */
  const stampTeam = async (name: string, dir: string, opts: { ms?: number; hold?: boolean }) => {
    await ok(0, 'agents/register', {
      org_id: orgId,
      manifest: shStampAgent(name, script, dir, opts),
    });
    const team = await ok(0, 'teams/register', {
      org_id: orgId,
      definition: { name, version: '1.0.0', phases: [{ name: 'work', agent: name }] },
    });
    for (const d of daemonIds) await ok(0, 'teams/install', { team_version_id: team.id, daemon_id: d });
  };
  const stampDir = (name: string) => {
    const dir = path.join(stamps, name);
    mkdirSync(dir);
    return dir;
  };
  /** Waits until every run has ended (one list call a poll), and answers the runs. */
  const allEnded = (ids: string[], timeoutMs: number) =>
    until(
      'every run ended',
      async () => {
        const listed: { run_id: string; state: string; error: string | null }[] = await ok(0, 'runs/list', {
          realm_id: realmId,
          limit: 500,
        });
        const mine = listed.filter((r) => ids.includes(r.run_id));
        const over = ['succeeded', 'failed', 'cancelled', 'terminated', 'lost'];
        return mine.length === ids.length && mine.every((r) => over.includes(r.state)) && mine;
      },
      timeoutMs,
    );

  before(async () => {
    // On PostgreSQL: creates the test schema (the hub processes find it in their search_path).
    let databaseUrl = tdb.url;
    if (tdb.schema) {
      const own = await openDatabase({ url: tdb.url, schema: tdb.schema });
      await own.close();
      databaseUrl = `${tdb.url}${tdb.url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${tdb.schema}`)}`;
    }
    env = (port) => ({
      SVC_HOME: svcHome,
      SVC_DATABASE_URL: databaseUrl,
      SVC_HUB_PORT: port,
      SVC_ADMIN_TOKEN: adminToken,
      SVC_LOG_LEVEL: 'info',
      SVC_REDISPATCH_MS: '300',
      SVC_OFFER_TIMEOUT_MS: '1500',
      SVC_HUB_HEARTBEAT_MS: '250',
      SVC_HUB_STALE_MS: '3000',
    });
    for (let i = 0; i < PROCESSES; i++) urls.push(`http://127.0.0.1:${await freePort()}`);
    await Promise.all(urls.map((_, i) => startHubProcess(i)));
    const org = await ok(0, 'orgs/new', { slug: 'groups', owner: { email: 'owner@groups.test' } });
    orgId = org.org.id;
    realmId = (await ok(0, 'realms/list', { org_id: orgId }))[0].id;
    // Daemon i prefers hub process i, and fails over to the other.
    for (let i = 0; i < 2; i++) {
      const prefer = i % PROCESSES;
      const dt = await ok(prefer, 'realms/create_daemon_token', { realm_id: realmId, name: `d${i}` });
      const hubUrls = [...new Set([urls[prefer]!, ...urls])];
      const d = await startTestDaemon(homes[i]!.dir, {
        config: { hubUrls, realmToken: dt.token },
        runner: { killGraceMs: 300, logFlushMs: 50 },
      });
      daemons.push(d);
      daemonIds.push(dt.daemon_id);
      await whenConnected(d);
    }
  });
  after(async () => {
    // Whatever still holds (after a failed test) lets go.
    if (existsSync(path.join(stamps, 'two-hundred')))
      writeFileSync(path.join(stamps, 'two-hundred', 'release'), '');
    for (const d of daemons) await d.close();
    for (const p of hubs) await p?.stop('SIGTERM');
    await killChildren();
    await tdb.cleanup();
    for (const h of homes) h.cleanup();
    rmSync(svcHome, { recursive: true, force: true });
    rmSync(stamps, { recursive: true, force: true });
  });

  it('200 runs in a group of limit 3, submitted through every process, never run more than 3 at once', async () => {
    const dir = stampDir('two-hundred');
    await stampTeam('tick-hold', dir, { ms: 40, hold: true });
    await stampTeam('tick', dir, { ms: 40 });
    const group = { realm_id: realmId, concurrency_key: 'two-hundred', concurrency_limit: 3 };
    // The first three hold their slots until released: the group fills up.
    const runs = [];
    for (let i = 0; i < 3; i++)
      runs.push(await ok(i % PROCESSES, 'runs/new', { ...group, team: 'tick-hold' }));
    await until('three alive', async () => startedCount(dir) === 3);
    // The other 197, ten at a time, alternately through each process.
    for (let i = 3; i < 200; i += 10) {
      const batch = Array.from({ length: Math.min(10, 200 - i) }, (_, j) =>
        ok((i + j) % PROCESSES, 'runs/new', { ...group, team: 'tick' }),
      );
      runs.push(...(await Promise.all(batch)));
    }
    assert.equal(startedCount(dir), 3, 'no fourth run started while three held the slots');
    assert.ok(
      runs.slice(3).every((r) => r.state === 'queued' && r.waiting_for?.limit === 3),
      'later runs wait for the group',
    );
    writeFileSync(path.join(dir, 'release'), '');
    const done = await allEnded(
      runs.map((r) => r.run_id),
      120_000,
    );
    for (const r of done) assert.equal(r.state, 'succeeded', JSON.stringify(r.error));
    const s = spans(dir);
    assert.equal(s.length, 200);
    const max = maxConcurrent(s);
    assert.equal(max, 3, `at most 3 at once, and 3 when they held their slots; saw ${max}`);
  });

  it('never runs more than the limit and leaves no run waiting forever', { timeout: 180_000 }, async () => {
    const dir = stampDir('kill');
    await stampTeam('job', dir, { ms: 150 });
    const runIds: string[] = [];
    const up = urls.map(() => true);
    const submit = async (n: number) => {
      for (let i = 0; i < n; i++) {
        // Alternately through each process that is up.
        const live = urls.flatMap((_, j) => (up[j] ? [j] : []));
        const r = await post(
          `${urls[live[runIds.length % live.length]!]}/v1/runs/new`,
          { realm_id: realmId, team: 'job', concurrency_key: 'kill', concurrency_limit: 2 },
          adminToken,
        );
        if (r.body?.ok) runIds.push(r.body.data.run_id);
      }
    };
    // A process is killed at a random moment while runs go through: once a random number of the
    // runs just submitted started, and up to 300 ms later, so that the kill lands anywhere in a
    // run's dispatch, claim, reports, end or the admission after it. With two, each in turn.
    for (const victim of PROCESSES === 2 ? [1, 0, 1] : [0, 0, 0]) {
      const before = startedCount(dir);
      await submit(6);
      const at = before + 1 + Math.floor(Math.random() * 4);
      await until('runs going through', async () => startedCount(dir) >= at, 60_000);
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      up[victim] = false;
      assert.equal(await hubs[victim]!.stop('SIGKILL'), null);
      // Through the survivor, if there is one.
      if (PROCESSES === 2) await submit(2);
      await startHubProcess(victim);
      up[victim] = true;
      await submit(2);
    }
    const done = await allEnded(runIds, 90_000);
    const max = maxConcurrent(spans(dir));
    assert.ok(max <= 2, `at most 2 agents at once, saw ${max}`);
    assert.equal(
      runIds.length,
      PROCESSES === 2 ? 30 : 24,
      'every run was started through a process that was up',
    );
    // A hub process dying costs no run: its daemons fail over and carry on.
    for (const r of done) assert.equal(r.state, 'succeeded', `${r.run_id}: ${r.state} ${r.error}`);
  });
});
