/**
 * Scheduled starts against plain ones, one hub process and one daemon on this machine, with a no-op
 * agent that records when it started (same clock as ours):
 * - schedule fire → agent started: a 6-field schedule every second; from each scheduled time (the
 *   scheduler wakes at it) to its agent running;
 * - baseline: runs/new reply → agent started, the same team, one run between two scheduled times.
 * The scheduled path also inserts the run (the runs/new baseline starts after its reply), so the two
 * differ by about one runs/new; a large difference would be the scheduler waking late.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../src/daemon/main.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { benchDatabase, benchDatabases, nowMs, percentile, post, sleep } from './lib/util.js';

const SLOTS = 12;

export default async function schedulesBench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const kind of await benchDatabases()) out.push(...(await oneDatabase(kind)));
  return out;
}

async function oneDatabase(kind: 'sqlite' | 'postgres'): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  const marks = path.join(db.dir, 'marks');
  mkdirSync(marks);
  const agent = path.join(db.dir, 'noop.cjs');
  writeFileSync(
    agent,
    `require('fs').writeFileSync(require('path').join(${JSON.stringify(marks)}, process.env.SVC_RUN_ID), String(performance.timeOrigin + performance.now()));`,
  );
  const adminToken = mintToken('user');
  const log = createLogger('bench', 'silent');
  const hub = await startHub({
    databaseUrl: db.url,
    ...(db.schema ? { schema: db.schema } : {}),
    adminToken,
    log,
  });
  let daemon: Awaited<ReturnType<typeof startDaemon>> | null = null;
  try {
    const call = (op: string, body: unknown) => post(`${hub.url}/v1/${op}`, body, adminToken);
    const org = await call('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
    const orgId = org.data.org.id as string;
    const realmId = (await call('realms/list', { org_id: orgId })).data[0].id as string;
    const dt = await call('realms/create_daemon_token', { realm_id: realmId, name: 'bench' });
    daemon = await startDaemon({
      config: {
        home: path.join(db.dir, 'daemon'),
        host: '127.0.0.1',
        port: 0,
        hubUrls: [hub.url],
        realmToken: dt.data.token,
      },
      log,
    });
    const link = daemon.link!;
    await new Promise<void>((resolve) =>
      link.connected ? resolve() : link.once('connected', () => resolve()),
    );
    await call('agents/register', {
      org_id: orgId,
      manifest: { name: 'noop', version: '1.0.0', command: [process.execPath, agent] },
    });
    const team = await call('teams/register', {
      org_id: orgId,
      definition: { name: 'noop-team', version: '1.0.0', phases: [{ name: 'only', agent: 'noop' }] },
    });
    // A run goes only to a daemon with its team installed.
    await call('teams/install', { team_version_id: team.data.id, daemon_id: dt.data.daemon_id });
    const markOf = async (runId: string) => {
      for (;;) {
        try {
          return Number(readFileSync(path.join(marks, runId), 'utf8'));
        } catch {
          await sleep(5);
        }
      }
    };
    // Warm-up.
    for (let i = 0; i < 3; i++)
      await markOf((await call('runs/new', { realm_id: realmId, team: 'noop-team' })).data.run_id);

    const schedule = (
      await call('schedules/new', {
        realm_id: realmId,
        team: 'noop-team',
        cron: '* * * * * *',
        overlap: 'queue',
      })
    ).data;
    const fired: number[] = [];
    const plain: number[] = [];
    const seen = new Set<string>();
    while (fired.length < SLOTS) {
      const slots = await hub.hub.db
        .selectFrom('schedule_slots')
        .select(['slot_at', 'run_id'])
        .where('schedule_id', '=', schedule.id)
        .where('status', '=', 'started')
        .execute();
      for (const s of slots) {
        if (seen.has(s.run_id!)) continue;
        seen.add(s.run_id!);
        fired.push((await markOf(s.run_id!)) - s.slot_at);
        // One plain run between two scheduled times.
        const r = await call('runs/new', { realm_id: realmId, team: 'noop-team' });
        const repliedAt = nowMs();
        plain.push((await markOf(r.data.run_id)) - repliedAt);
      }
      await sleep(20);
    }
    await call('schedules/update', { id: schedule.id, enabled: false });
    fired.sort((a, b) => a - b);
    plain.sort((a, b) => a - b);
    return ([50, 99] as const).map((p) => ({
      name: `schedule fire → agent started, ${kind}, 1 hub process, p${p}`,
      unit: 'ms',
      value: percentile(fired, p),
      baseline: { name: `runs/new reply → agent started, p${p}`, value: percentile(plain, p) },
      higherIsBetter: false,
      note: `n=${fired.length}${p === 99 ? ' (p99 of so few runs is about their maximum)' : ''}`,
    }));
  } finally {
    await daemon?.close();
    await hub.close();
    await db.cleanup();
  }
}
