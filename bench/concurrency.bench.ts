/**
 * Concurrency groups (CONTRACT.md §11): runs per second through a group of limit 8, against the
 * same runs in no group on the same hub and daemon (the baseline). All runs are submitted at once;
 * in the group at most 8 run, and each end admits the next waiting run (admission.service.ts). The
 * ratio is the price of admission: the slot count and advisory lock on the dispatch path, and
 * dispatching waiting runs as slots free instead of all at once. SQLite and PostgreSQL
 * (`SVC_BENCH_DB` picks one), one hub process.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../src/daemon/main.js';
import { startHub } from '../src/hub/server.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { benchDatabase, benchDatabases, pool, post, sleep } from './lib/util.js';

const RUNS = 80;
const LIMIT = 8;

export default async function concurrencyBench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const kind of await benchDatabases()) out.push(await groupBench(kind));
  return out;
}

async function groupBench(kind: 'sqlite' | 'postgres'): Promise<BenchResult> {
  const db = benchDatabase(kind);
  mkdirSync(path.join(db.dir, 'agent'));
  const agent = path.join(db.dir, 'agent', 'noop.cjs');
  writeFileSync(agent, '');
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
    /** Submits RUNS runs (8 requests in flight) and waits for all of them: runs per second. */
    const batch = async (extra: Record<string, unknown>) => {
      const t0 = performance.now();
      const ids = await pool(RUNS, 8, async () => {
        const r = await call('runs/new', { realm_id: realmId, team: 'noop-team', ...extra });
        return r.data.run_id as string;
      });
      const left = new Set(ids);
      while (left.size > 0) {
        const page = await call('runs/list', { realm_id: realmId, limit: 200 });
        for (const r of page.data as { run_id: string; state: string }[]) {
          if (!left.has(r.run_id) || !['succeeded', 'failed'].includes(r.state)) continue;
          if (r.state !== 'succeeded') throw new Error(`bench run ${r.run_id} failed`);
          left.delete(r.run_id);
        }
        if (left.size > 0) await sleep(20);
      }
      return RUNS / ((performance.now() - t0) / 1000);
    };
    await batch({}); // warm-up
    const plain = await batch({});
    const grouped = await batch({ concurrency_key: 'bench', concurrency_limit: LIMIT });
    return {
      name: `runs through a concurrency group of limit ${LIMIT}, ${kind}, 1 hub process`,
      unit: 'runs/s',
      value: grouped,
      baseline: { name: 'the same runs in no group', value: plain },
      higherIsBetter: true,
      note: `${RUNS} runs submitted 8 at a time; a no-op agent`,
    };
  } finally {
    await daemon?.close();
    await hub.close();
    await db.cleanup();
  }
}
