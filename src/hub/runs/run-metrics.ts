import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';

/**
 * The queue in Prometheus text (GET /metrics, docs/operations.md): queued runs per realm and per
 * concurrency group and the slots in use per group, read by the re-dispatch pass of this process;
 * and how long runs waited queued before this process dispatched them (a histogram).
 */

/** Upper bounds of the wait-time buckets, in seconds. */
const BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
/** Groups shown at most (the busiest), so that a key with many values cannot flood a scrape. */
const MAX_GROUPS = 200;

export interface RunMetrics {
  /** A run left `queued` for a daemon after waiting this long. */
  observeWait(ms: number): void;
  /** Reads the queue gauges again (the re-dispatch pass calls it). */
  refresh(db: Kysely<DB>): Promise<void>;
  lines(): string[];
}

const label = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export function createRunMetrics(): RunMetrics {
  const counts = BUCKETS.map(() => 0);
  let sum = 0;
  let total = 0;
  let realms: { realm_id: string; n: number }[] = [];
  let groups: { group: string; queued: number; used: number }[] = [];
  return {
    observeWait(ms) {
      const s = Math.max(0, ms) / 1000;
      total++;
      sum += s;
      BUCKETS.forEach((b, i) => {
        if (s <= b) counts[i]!++;
      });
    },
    async refresh(db) {
      const byRealm = await db
        .selectFrom('runs')
        .select((eb) => ['realm_id', eb.fn.countAll<number | string>().as('n')])
        .where('state', '=', 'queued')
        .groupBy('realm_id')
        .execute();
      realms = byRealm.map((r) => ({ realm_id: r.realm_id, n: Number(r.n) }));
      const byGroup = await db
        .selectFrom('run_groups as g')
        .innerJoin('runs as r', 'r.run_id', 'g.run_id')
        .select((eb) => [
          'g.group_key',
          eb.fn
            .sum<number | string>(eb.case().when('r.state', '=', 'queued').then(1).else(0).end())
            .as('queued'),
          eb.fn.countAll<number | string>().as('used_or_queued'),
        ])
        .where('r.state', 'in', ['queued', 'offered', 'assigned', 'running', 'awaiting_input'])
        .groupBy('g.group_key')
        .orderBy('used_or_queued', 'desc')
        .limit(MAX_GROUPS)
        .execute();
      groups = byGroup.map((r) => ({
        group: r.group_key,
        queued: Number(r.queued),
        used: Number(r.used_or_queued) - Number(r.queued),
      }));
    },
    lines() {
      const out = [
        '# HELP svc_hub_runs_queued Queued runs per realm.',
        '# TYPE svc_hub_runs_queued gauge',
        ...realms.map((r) => `svc_hub_runs_queued{realm="${label(r.realm_id)}"} ${r.n}`),
        '# HELP svc_hub_runs_group_queued Queued runs per concurrency group (realm/key/value).',
        '# TYPE svc_hub_runs_group_queued gauge',
        ...groups.map((g) => `svc_hub_runs_group_queued{group="${label(g.group)}"} ${g.queued}`),
        '# HELP svc_hub_runs_group_slots_used Slots in use per concurrency group.',
        '# TYPE svc_hub_runs_group_slots_used gauge',
        ...groups.map((g) => `svc_hub_runs_group_slots_used{group="${label(g.group)}"} ${g.used}`),
        '# HELP svc_hub_run_queue_wait_seconds How long runs waited queued before this process dispatched them.',
        '# TYPE svc_hub_run_queue_wait_seconds histogram',
        ...BUCKETS.map((b, i) => `svc_hub_run_queue_wait_seconds_bucket{le="${b}"} ${counts[i]}`),
        `svc_hub_run_queue_wait_seconds_bucket{le="+Inf"} ${total}`,
        `svc_hub_run_queue_wait_seconds_sum ${sum}`,
        `svc_hub_run_queue_wait_seconds_count ${total}`,
      ];
      return out;
    },
  };
}
