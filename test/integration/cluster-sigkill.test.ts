import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { type Database, openDatabase } from '../../src/db/index.js';
import { mintToken } from '../../src/shared/tokens.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { TEST_DB, testDatabase } from '../helpers/db.js';
import { post } from '../helpers/hub.js';
import { agentDir } from '../helpers/runs.js';
import { connectDaemon, type TunnelClient } from '../helpers/tunnel-client.js';
import { daemonHome, freePort, startTestDaemon, whenConnected } from './daemon-harness.js';

/** Waits for a condition another process makes true (there is no event to await across processes). */
async function until<T>(what: string, probe: () => Promise<T | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Scale-out, end to end: three real `svc hub` processes on one PostgreSQL schema, four daemons spread
 * over them (each with the list of all three hub URLs, its own first), runs started through every
 * process. One process gets SIGKILL while every run's agent is busy; more runs are started at once,
 * through the survivors. Every run must succeed, every agent must have run exactly once, and every
 * command must end acknowledged. The outbox scan is set to 60 s: delivery within the test is the
 * cross-process wake-up's work (and the redelivery on reconnect's).
 */
describe('three hub processes on one database, one killed mid-run (SIGKILL)', {
  skip: TEST_DB !== 'postgres' && 'PostgreSQL only: SQLite has one hub process',
}, () => {
  const tdb = testDatabase();
  const svcHome = mkdtempSync(path.join(tmpdir(), 'svc-cluster-'));
  const agents = agentDir();
  const work = mkdtempSync(path.join(tmpdir(), 'svc-cluster-work-'));
  const ledger = path.join(work, 'executed.log');
  const gate = path.join(work, 'gate');
  const adminToken = mintToken('user');
  const hubs: LongRunning[] = [];
  const urls: string[] = [];
  const daemons: RunningDaemon[] = [];
  const homes: { cleanup(): void }[] = [];
  let stranded: TunnelClient | undefined;
  let own: Database;

  before(async () => {
    own = await openDatabase({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    const databaseUrl = `${tdb.url}${tdb.url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${tdb.schema}`)}`;
    for (let i = 0; i < 3; i++) urls.push(`http://127.0.0.1:${await freePort()}`);
    // Started together: they also race to apply the migrations.
    const started = urls.map((u) =>
      startCli(['hub'], {
        env: {
          SVC_HOME: svcHome,
          SVC_DATABASE_URL: databaseUrl,
          SVC_HUB_PORT: new URL(u).port,
          SVC_ADMIN_TOKEN: adminToken,
          SVC_LOG_LEVEL: 'info',
          SVC_OUTBOX_SCAN_MS: '60000',
          SVC_HUB_HEARTBEAT_MS: '250',
          SVC_HUB_STALE_MS: '3000',
        },
      }),
    );
    hubs.push(...started);
    await Promise.all(started.map((p) => p.waitFor(/"msg":"hub ready"/)));
  });
  after(async () => {
    if (!existsSync(gate)) writeFileSync(gate, '');
    await stranded?.close();
    for (const d of daemons) await d.close();
    for (const p of hubs) await p.stop('SIGTERM');
    await killChildren();
    await own?.close();
    await tdb.cleanup();
    for (const h of homes) h.cleanup();
    agents.cleanup();
    for (const dir of [svcHome, work]) rmSync(dir, { recursive: true, force: true });
  });

  it('finishes every run, runs every agent once and leaves no command unacknowledged', {
    timeout: 180_000,
  }, async () => {
    const ok = async (hub: number, op: string, body: unknown) => {
      const r = await post(`${urls[hub]}/v1/${op}`, body, adminToken);
      assert.equal(r.body?.ok, true, `${op} on hub ${hub}: ${JSON.stringify(r.body)}`);
      return r.body.data;
    };
    const org = await ok(0, 'orgs/new', { slug: 'cluster', owner: { email: 'owner@cluster.test' } });
    const realmId: string = (await ok(1, 'realms/list', { org_id: org.org.id }))[0].id;
    // A rule sends the organization's disconnections to a channel (which the hubs refuse to call, a
    // private address), so that each is written to `events` with its delivery.
    const channel = await ok(2, 'notification_channels/new', {
      org_id: org.org.id,
      name: 'presence',
      destinations: [{ type: 'webhook', webhook_url: 'http://127.0.0.1:9/presence' }],
    });
    await ok(0, 'realms/new_notification_rule', {
      org_id: org.org.id,
      event: 'daemon.disconnected',
      channel_ids: [channel.id],
    });
    // The agent notes that it ran, then works until the test opens the gate.
    const script = agents.write(
      'worker',
      `const fs = require('fs');
fs.appendFileSync(${JSON.stringify(ledger)}, process.env.SVC_RUN_ID + '\\n');
const wait = () => (fs.existsSync(${JSON.stringify(gate)}) ? process.exit(0) : setTimeout(wait, 20));
wait();`,
    );
    await ok(2, 'agents/register', {
      org_id: org.org.id,
      manifest: { name: 'worker', version: '1.0.0', agent_type: 'exec', command: [process.execPath, script] },
    });
    const team = await ok(0, 'teams/register', {
      org_id: org.org.id,
      definition: { name: 'job', version: '1.0.0', phases: [{ name: 'work', agent: 'worker' }] },
    });

    // Four daemons; each prefers one hub and fails over to the others. Hub 1 (the one to be
    // killed) is the first choice of daemons 1 and 3.
    const prefer = [0, 1, 2, 1];
    const acks: { daemon: number; tx_id: string; replayed: boolean }[] = [];
    const daemonIds: string[] = [];
    for (const [i, first] of prefer.entries()) {
      const dt = await ok(i % 3, 'realms/create_daemon_token', { realm_id: realmId, name: `d${i}` });
      daemonIds.push(dt.daemon_id);
      const home = daemonHome();
      homes.push(home);
      const hubUrls = [urls[first]!, ...urls.filter((_, j) => j !== first)];
      const d = await startTestDaemon(home.dir, {
        config: { hubUrls, realmToken: dt.token },
        runner: { killGraceMs: 300, logFlushMs: 50 },
      });
      daemons.push(d);
      d.link!.on('command-acked', (a) => acks.push({ daemon: i, tx_id: a.tx_id, replayed: a.replayed }));
      await whenConnected(d);
    }
    // One workspace per daemon, registered through a hub the daemon is not connected to (the ack
    // comes back through the bus).
    const workspaces: string[] = [];
    for (const [i, first] of prefer.entries()) {
      const dir = path.join(work, `ws${i}`);
      mkdirSync(dir);
      const ws = await ok((first + 1) % 3, 'workspaces/register', { daemon_id: daemonIds[i], path: dir });
      workspaces.push(ws.id);
      // The machine owner's allow-list: the team installed on the daemon and assigned to its workspace.
      await ok(i % 3, 'teams/install', { team_version_id: team.id, daemon_id: daemonIds[i] });
      await ok(i % 3, 'workspaces/assign_teams', { workspace_id: ws.id, team_ids: [team.team_id] });
    }
    // A daemon connected only to hub 1: nothing brings it back after the kill.
    const lone = await ok(0, 'realms/new', { org_id: org.org.id, name: 'lone' });
    const loneDt = await ok(0, 'realms/create_daemon_token', { realm_id: lone.id, name: 'lone' });
    stranded = await connectDaemon(urls[1]!, loneDt.token);

    // Wave 1: through every hub process, a run in each workspace (so hub 1's daemons surely have
    // some) and two offered runs (first claim wins).
    const runs: string[] = [];
    const start = async (hub: number, body: Record<string, unknown>) =>
      runs.push((await ok(hub, 'runs/new', { team: 'job', ...body })).run_id);
    for (const [i, ws] of workspaces.entries()) await start((i + 2) % 3, { workspace_id: ws });
    for (const hub of [0, 1, 2]) for (let k = 0; k < 2; k++) await start(hub, { realm_id: realmId });
    const wave1 = runs.length;
    const lines = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : []);
    await until('every wave-1 agent is running', async () => lines().length >= wave1);

    // Hub 1 holds daemons 1 and 3 (and the stranded one).
    const victim = hubs[1]!;
    const victimId = (
      await own.db
        .selectFrom('hub_instances')
        .select('id')
        .where('pid', '=', victim.child.pid!)
        .executeTakeFirstOrThrow()
    ).id;
    const held = await own.db
      .selectFrom('daemons')
      .select('id')
      .where('hub_instance_id', '=', victimId)
      .where('status', '=', 'online')
      .execute();
    assert.deepEqual(held.map((d) => d.id).sort(), [daemonIds[1]!, daemonIds[3]!, loneDt.daemon_id].sort());

    const back = [daemons[1]!, daemons[3]!].map((d) => once(d.link!, 'connected'));
    assert.equal(await victim.stop('SIGKILL'), null);
    assert.equal(victim.child.signalCode, 'SIGKILL');
    // Wave 2, at once, through the survivors: some commands are written while daemons 1 and 3 are
    // still recorded as held by the dead process.
    await start(0, { workspace_id: workspaces[1] });
    await start(2, { workspace_id: workspaces[3] });
    await start(0, { realm_id: realmId });
    await start(2, { realm_id: realmId });
    await Promise.all(back);
    for (const i of [1, 3]) assert.equal(daemons[i]!.link!.connected, true);

    // The agents may finish now.
    writeFileSync(gate, '');
    const live = [0, 2];
    const states = await until('every run ended', async () => {
      const all = await Promise.all(
        runs.map(async (id, k) => (await ok(live[k % 2]!, 'runs/get_by_id', { run_id: id })).state as string),
      );
      return all.every((s) => ['succeeded', 'failed', 'cancelled', 'terminated', 'lost'].includes(s)) && all;
    });
    assert.deepEqual(
      states,
      runs.map(() => 'succeeded'),
    );

    // Each agent ran exactly once.
    const executed = lines();
    assert.equal(executed.length, runs.length, executed.join(','));
    assert.deepEqual([...executed].sort(), [...runs].sort());

    // No command lost: every one ends acknowledged (the last acks of the losing offers may trail).
    await until('every command acknowledged', async () => {
      const pending = await own.db
        .selectFrom('command_outbox')
        .select('tx_id')
        .where('status', '=', 'pending')
        .where('daemon_id', 'in', daemonIds)
        .execute();
      return pending.length === 0;
    });
    // None executed twice: a daemon ran each tx_id once; a redelivery answered the stored reply.
    const fresh = acks.filter((a) => !a.replayed).map((a) => `${a.daemon}:${a.tx_id}`);
    assert.equal(new Set(fresh).size, fresh.length);

    // The daemon stranded on the dead process is marked offline by the survivors, once.
    await until('the stranded daemon is offline', async () => {
      const d = await own.db
        .selectFrom('daemons')
        .select('status')
        .where('id', '=', loneDt.daemon_id)
        .executeTakeFirstOrThrow();
      return d.status === 'offline';
    });
    const gone = await own.db
      .selectFrom('events')
      .select('payload')
      .where('type', '=', 'daemon.disconnected')
      .where('subject_id', '=', loneDt.daemon_id)
      .execute();
    assert.equal(gone.length, 1);
    assert.equal(JSON.parse(gone[0]!.payload).reason, 'hub_instance_lost');
    // The daemons that failed over were not touched, and the dead process's row is gone.
    for (const i of [1, 3]) {
      const d = await own.db
        .selectFrom('daemons')
        .select(['status', 'hub_instance_id'])
        .where('id', '=', daemonIds[i]!)
        .executeTakeFirstOrThrow();
      assert.equal(d.status, 'online');
      assert.notEqual(d.hub_instance_id, victimId);
      const events = await own.db
        .selectFrom('events')
        .select('id')
        .where('type', '=', 'daemon.disconnected')
        .where('subject_id', '=', daemonIds[i]!)
        .execute();
      assert.deepEqual(events, []);
    }
    assert.equal(
      await own.db.selectFrom('hub_instances').select('id').where('id', '=', victimId).executeTakeFirst(),
      undefined,
    );

    for (const i of live) assert.equal(await hubs[i]!.stop('SIGTERM'), 0);
  });
});
