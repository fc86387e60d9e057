import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { openDatabase } from '../../src/db/index.js';
import { mintToken } from '../../src/shared/tokens.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { TEST_DB, testDatabase } from '../helpers/db.js';
import { post } from '../helpers/hub.js';
import { agentDir } from '../helpers/runs.js';
import { until } from '../helpers/until.js';
import { daemonHome, freePort, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * A concurrency group of limit 2 across two `svc hub` processes on one PostgreSQL database, one of
 * them killed (SIGKILL) at a random point while runs go through, then started again and killed
 * again. From the agents' own start and end stamps: never more than 2 at once, and every run ends.
 */
describe('a concurrency group across two hub processes, one killed at random (SIGKILL)', {
  skip: TEST_DB !== 'postgres' && 'PostgreSQL only: SQLite has one hub process',
}, () => {
  const tdb = testDatabase();
  const svcHome = mkdtempSync(path.join(tmpdir(), 'svc-group-kill-'));
  const stamps = mkdtempSync(path.join(tmpdir(), 'svc-group-stamps-'));
  const agents = agentDir();
  const home = daemonHome();
  const adminToken = mintToken('user');
  const urls: string[] = [];
  const hubs: LongRunning[] = [];
  let daemon: RunningDaemon | undefined;
  let env: (port: string) => Record<string, string>;

  const startHubProcess = async (i: number) => {
    const p = startCli(['hub'], { env: env(new URL(urls[i]!).port) });
    hubs[i] = p;
    await p.waitFor(/"msg":"hub ready"/);
  };

  before(async () => {
    // Creates the test schema (the hub processes find it in their search_path).
    const own = await openDatabase({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    await own.close();
    const databaseUrl = `${tdb.url}${tdb.url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${tdb.schema}`)}`;
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
    for (let i = 0; i < 2; i++) urls.push(`http://127.0.0.1:${await freePort()}`);
    await startHubProcess(0);
    await startHubProcess(1);
  });
  after(async () => {
    await daemon?.close();
    for (const p of hubs) await p?.stop('SIGTERM');
    await killChildren();
    await tdb.cleanup();
    home.cleanup();
    agents.cleanup();
    for (const dir of [svcHome, stamps]) rmSync(dir, { recursive: true, force: true });
  });

  it('never runs more than the limit and leaves no run waiting forever', { timeout: 120_000 }, async () => {
    const ok = async (hub: number, op: string, body: unknown) => {
      const r = await post(`${urls[hub]}/v1/${op}`, body, adminToken);
      assert.equal(r.body?.ok, true, `${op} on hub ${hub}: ${JSON.stringify(r.body)}`);
      return r.body.data;
    };
    const org = await ok(0, 'orgs/new', { slug: 'groups', owner: { email: 'owner@groups.test' } });
    const realmId: string = (await ok(0, 'realms/list', { org_id: org.org.id }))[0].id;
    const script = agents.write(
      'stamp',
      `const fs = require('fs');
const base = require('path').join(${JSON.stringify(stamps)}, process.env.SVC_RUN_ID);
fs.writeFileSync(base + '.start', String(Date.now()));
setTimeout(() => { fs.writeFileSync(base + '.end', String(Date.now())); }, 150);`,
    );
    await ok(0, 'agents/register', {
      org_id: org.org.id,
      manifest: { name: 'stamp', version: '1.0.0', agent_type: 'exec', command: [process.execPath, script] },
    });
    const team = await ok(0, 'teams/register', {
      org_id: org.org.id,
      definition: { name: 'job', version: '1.0.0', phases: [{ name: 'work', agent: 'stamp' }] },
    });
    const dt = await ok(0, 'realms/create_daemon_token', { realm_id: realmId, name: 'd' });
    // The daemon prefers the process that will be killed, and fails over to the other.
    daemon = await startTestDaemon(home.dir, {
      config: { hubUrls: [urls[1]!, urls[0]!], realmToken: dt.token },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(daemon);
    await ok(0, 'teams/install', { team_version_id: team.id, daemon_id: dt.daemon_id });

    const started = () => readdirSync(stamps).filter((f) => f.endsWith('.start')).length;
    const runIds: string[] = [];
    let victimUp = true;
    const submit = async (n: number) => {
      for (let i = 0; i < n; i++) {
        // Through whichever process is up; the victim may be down.
        const hub = runIds.length % 2 === 1 && victimUp ? 1 : 0;
        const r = await post(
          `${urls[hub]}/v1/runs/new`,
          { realm_id: realmId, team: 'job', concurrency_key: 'kill', concurrency_limit: 2 },
          adminToken,
        );
        if (r.body?.ok) runIds.push(r.body.data.run_id);
      }
    };
    await submit(10);
    for (let round = 0; round < 2; round++) {
      // A random point while runs go through.
      const at = started() + 1 + Math.floor(Math.random() * 4);
      await until('runs going through', async () => started() >= at, 60_000);
      victimUp = false;
      assert.equal(await hubs[1]!.stop('SIGKILL'), null);
      await submit(4);
      await startHubProcess(1);
      victimUp = true;
      await submit(4);
    }
    const ended = ['succeeded', 'failed', 'cancelled', 'terminated', 'lost'];
    await until(
      'every run ended',
      async () => {
        for (const id of runIds) {
          const r = await post(`${urls[0]}/v1/runs/get_by_id`, { run_id: id }, adminToken);
          if (!ended.includes(r.body?.data?.state)) return false;
        }
        return true;
      },
      90_000,
    );
    // From the agents' own stamps: at equal stamps an end comes first.
    const events: { at: number; d: number }[] = [];
    for (const f of readdirSync(stamps).filter((n) => n.endsWith('.start'))) {
      const run = f.slice(0, -'.start'.length);
      const end = path.join(stamps, `${run}.end`);
      events.push({ at: Number(readFileSync(path.join(stamps, f), 'utf8')), d: 1 });
      events.push({
        at: existsSync(end) ? Number(readFileSync(end, 'utf8')) : Number.POSITIVE_INFINITY,
        d: -1,
      });
    }
    events.sort((a, b) => a.at - b.at || a.d - b.d);
    let now = 0;
    let max = 0;
    for (const e of events) {
      now += e.d;
      max = Math.max(max, now);
    }
    assert.ok(max <= 2, `at most 2 agents at once, saw ${max}`);
    assert.ok(runIds.length >= 18, `runs were started through the survivors (${runIds.length})`);
  });
});
