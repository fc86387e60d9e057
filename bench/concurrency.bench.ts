/**
 * Concurrency groups (CONTRACT.md §11), on SQLite and PostgreSQL (`SVC_BENCH_DB` picks one), with
 * the hub in a child process (bench/lib/hub-process.ts) and the daemon here:
 * (a) runs per second through a group of limit 8, against the same runs in no group on the same
 *     hub and daemon (the baseline). Runs are submitted with 8 requests in flight; in the group at
 *     most 8 run, and each end admits the next waiting run (admission.service.ts). The ratio is the
 *     price of admission (the slot count, and on PostgreSQL the advisory lock, on the dispatch path) and of
 *     dispatching waiting runs as slots free instead of all at once.
 * (b) how soon a freed slot is taken: from a run's end to the offer of the run that waited for its
 *     slot, against a run in no group from `run.queued` to `run.offered` inside its `runs/new` (all
 *     stamps from the runs' histories). The difference is what admitting a waiting run after the
 *     ending transaction's commit adds to a dispatch; the note also gives the whole `runs/new`
 *     round trip to the offer (this process's clock to the hub's, one machine).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../src/daemon/main.js';
import { createLogger } from '../src/shared/logger.js';
import { mintToken } from '../src/shared/tokens.js';
import type { BenchResult } from './index.js';
import { type Child, startChild } from './lib/child.js';
import { benchDatabase, benchDatabases, nowMs, percentile, pool, post, sleep } from './lib/util.js';

const RUNS = 80;
const LIMIT = 8;
const IN_FLIGHT = 8;

interface Entry {
  type: string;
  at: number;
}

export default async function concurrencyBench(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const kind of await benchDatabases()) out.push(...(await groupBench(kind)));
  return out;
}

async function groupBench(kind: 'sqlite' | 'postgres'): Promise<BenchResult[]> {
  const db = benchDatabase(kind);
  mkdirSync(path.join(db.dir, 'agent'));
  const agent = path.join(db.dir, 'agent', 'noop.cjs');
  writeFileSync(agent, '');
  const adminToken = mintToken('user');
  const log = createLogger('bench', 'silent');
  const dbOpts = { databaseUrl: db.url, ...(db.schema ? { schema: db.schema } : {}), adminToken };
  let hub: Child | null = null;
  let daemon: Awaited<ReturnType<typeof startDaemon>> | null = null;
  try {
    hub = await startChild('hub-process.ts', { env: { SVC_BENCH_HUB: JSON.stringify(dbOpts) } });
    const url = hub.hello.url as string;
    const call = (op: string, body: unknown) => post(`${url}/v1/${op}`, body, adminToken);
    const org = await call('orgs/new', { slug: 'bench', owner: { email: 'owner@bench.test' } });
    const orgId = org.data.org.id as string;
    const realmId = (await call('realms/list', { org_id: orgId })).data[0].id as string;
    const dt = await call('realms/create_daemon_token', { realm_id: realmId, name: 'bench' });
    daemon = await startDaemon({
      config: {
        home: path.join(db.dir, 'daemon'),
        host: '127.0.0.1',
        port: 0,
        hubUrls: [url],
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
    /** Submits RUNS runs (IN_FLIGHT requests at a time) and waits for all of them. */
    const batch = async (extra: Record<string, unknown>) => {
      const t0 = performance.now();
      const sent = new Map<string, number>();
      const ids = await pool(RUNS, IN_FLIGHT, async () => {
        const at = nowMs();
        const r = await call('runs/new', { realm_id: realmId, team: 'noop-team', ...extra });
        sent.set(r.data.run_id, at);
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
      return { perSecond: RUNS / ((performance.now() - t0) / 1000), ids, sent };
    };
    const histories = (ids: string[]) =>
      pool(ids.length, 8, async (i) => {
        const r = await call('runs/get_by_id', { run_id: ids[i], with_history: true });
        return r.data.history as Entry[];
      });
    const at = (h: Entry[], type: string) => h.find((e) => e.type === type)!.at;

    await batch({}); // warm-up
    const plain = await batch({});
    const grouped = await batch({ concurrency_key: 'bench', concurrency_limit: LIMIT });

    // (b) Each grouped run that was queued when a slot freed: the end before its offer, to its offer.
    const groupedHistories = await histories(grouped.ids);
    const ends = groupedHistories.map((h) => at(h, 'run.ended')).sort((a, b) => a - b);
    const takeSlot: number[] = [];
    for (const h of groupedHistories) {
      const offered = at(h, 'run.offered');
      const freed = ends.filter((e) => e <= offered).pop();
      if (freed !== undefined && at(h, 'run.queued') < freed) takeSlot.push(offered - freed);
    }
    // A new run in no group is offered in the transaction that writes it: from its request to its offer.
    const plainHistories = await histories(plain.ids);
    const newRun = plain.ids.map((id, i) => at(plainHistories[i]!, 'run.offered') - plain.sent.get(id)!);
    for (const xs of [takeSlot, newRun]) xs.sort((a, b) => a - b);
    return [
      {
        name: `runs through a concurrency group of limit ${LIMIT}, ${kind}`,
        unit: 'runs/s',
        value: grouped.perSecond,
        baseline: { name: 'the same runs in no group', value: plain.perSecond },
        higherIsBetter: true,
        note: `${RUNS} runs submitted ${IN_FLIGHT} at a time; a no-op agent; hub in its own process`,
      },
      {
        name: `a freed slot taken: run ended → waiting run offered, p50, ${kind}`,
        unit: 'ms',
        value: percentile(takeSlot, 50),
        baseline: {
          name: 'a new run in no group: runs/new sent → offered, p50',
          value: percentile(newRun, 50),
        },
        higherIsBetter: false,
        note:
          `${takeSlot.length} waiting runs (p90 ${percentile(takeSlot, 90).toFixed(1)} ms), ` +
          `${newRun.length} new (p90 ${percentile(newRun, 90).toFixed(1)} ms), both under the same load`,
      },
    ];
  } finally {
    await daemon?.close();
    await hub?.close();
    await db.cleanup();
  }
}
