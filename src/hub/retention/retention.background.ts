import type { ArtifactStore } from '../artifacts/store.js';
import type { Hub } from '../context.js';
import { emptyRemoved, type Removed, retentionPass } from './retention.service.js';

export interface RetentionLoop {
  /** Everything this process removed since it started (Prometheus counters). */
  removed(): Removed;
  /** Resolves when the pass under way (if any) has stopped; no pass starts after. */
  stop(): Promise<void>;
}

/**
 * The retention job of one hub process: a pass every `everyMs` (the first one after `everyMs`), one
 * at a time. Every hub process runs it; the passes share the work (see retention.repo.ts).
 */
export function startRetention(
  hub: Hub,
  everyMs: number,
  batch: number,
  store?: ArtifactStore,
): RetentionLoop {
  const total = emptyRemoved();
  let stopped = false;
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = retentionPass(hub, { batch, stopped: () => stopped, ...(store ? { store } : {}) }, total)
      .catch((err) => hub.log.error({ err }, 'retention pass failed'))
      .finally(() => {
        running = null;
      });
  }, everyMs);
  timer.unref();
  return {
    removed: () => ({ ...total }),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/** The counters in Prometheus text format. */
export function retentionMetrics(removed: Removed): string[] {
  const { log_bytes, artifact_bytes, ...rows } = removed;
  return [
    '# HELP svc_hub_retention_rows_removed_total Rows removed by retention in this hub process, by table.',
    '# TYPE svc_hub_retention_rows_removed_total counter',
    ...Object.entries(rows).map(
      ([table, n]) => `svc_hub_retention_rows_removed_total{table="${table}"} ${n}`,
    ),
    '# HELP svc_hub_retention_log_bytes_removed_total Text bytes of the log lines removed by retention.',
    '# TYPE svc_hub_retention_log_bytes_removed_total counter',
    `svc_hub_retention_log_bytes_removed_total ${log_bytes}`,
    '# HELP svc_hub_retention_artifact_bytes_removed_total Bytes of artifact files removed by retention.',
    '# TYPE svc_hub_retention_artifact_bytes_removed_total counter',
    `svc_hub_retention_artifact_bytes_removed_total ${artifact_bytes}`,
  ];
}
