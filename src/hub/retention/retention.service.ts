import { unreferenced } from '../artifacts/artifacts.repo.js';
import type { ArtifactStore } from '../artifacts/store.js';
import type { Hub } from '../context.js';
import { getSetting } from '../settings/settings.repo.js';
import {
  removeAckedCommands,
  removeFinishedDeliveries,
  removeOldArtifacts,
  removeOldEvents,
  removeOldLogs,
  removeOldRuns,
} from './retention.repo.js';

/**
 * Retention (CONTRACT.md §13): the deployment settings `retention.runs_days` and
 * `retention.logs_days` (unset: kept forever) remove terminal runs (with their artifacts), and the
 * logs of kept runs, that ended longer ago than that; `retention.artifacts_days` removes the
 * artifacts of terminal runs saved longer ago (a store file goes with the last row naming it);
 * acknowledged daemon commands and finished notification deliveries go after 7 days, and events
 * recorded 7 days ago or more once no delivery refers to them. Work goes in batches, each its own short transaction, so no lock is
 * held for long and other writers interleave.
 */

export const RUNS_DAYS_SETTING = 'retention.runs_days';
export const LOGS_DAYS_SETTING = 'retention.logs_days';
export const ARTIFACTS_DAYS_SETTING = 'retention.artifacts_days';
const DAY_MS = 24 * 60 * 60 * 1000;
/** Acknowledged commands, finished deliveries and the events of none are kept this long. */
export const OUTBOX_KEEP_MS = 7 * DAY_MS;

/** What one pass removed, by kind (rows), and the text bytes of the log lines removed. */
export interface Removed {
  runs: number;
  run_history: number;
  run_logs: number;
  reviews: number;
  command_outbox: number;
  notification_deliveries: number;
  events: number;
  artifacts: number;
  log_bytes: number;
  /** Bytes of the artifact files this process removed from the store. */
  artifact_bytes: number;
}

export const emptyRemoved = (): Removed => ({
  runs: 0,
  run_history: 0,
  run_logs: 0,
  reviews: 0,
  command_outbox: 0,
  notification_deliveries: 0,
  events: 0,
  artifacts: 0,
  log_bytes: 0,
  artifact_bytes: 0,
});

/** A retention setting in days (a positive number; decimals allowed), or null when unset. */
export function parseDays(raw: string | null): number | null {
  if (raw === null) return null;
  const n = Number(raw.trim());
  return raw.trim() !== '' && Number.isFinite(n) && n > 0 ? n : null;
}

export interface PassOptions {
  /** Rows per batch (per transaction). */
  batch: number;
  /** Stop when the hub is closing: a pass ends between batches. */
  stopped?: () => boolean;
  /** The artifact store: files no artifact row refers to any more are removed from it. */
  store?: ArtifactStore;
}

/** Runs batches of `step` until one removes nothing (or the hub stops). */
async function drain(hub: Hub, opts: PassOptions, step: (db: Hub['db']) => Promise<number>): Promise<void> {
  while (!opts.stopped?.()) {
    const n = await hub.db.transaction().execute((trx) => step(trx));
    if (n === 0) return;
  }
}

/** One retention pass over everything that is due; adds what it removed to `into`. */
export async function retentionPass(
  hub: Hub,
  opts: PassOptions,
  into: Removed = emptyRemoved(),
): Promise<Removed> {
  const now = hub.now();
  const [runsDays, logsDays, artifactsDays] = await Promise.all([
    getSetting(hub, RUNS_DAYS_SETTING).then(parseDays),
    getSetting(hub, LOGS_DAYS_SETTING).then(parseDays),
    getSetting(hub, ARTIFACTS_DAYS_SETTING).then(parseDays),
  ]);
  const { dialect } = hub;
  // Digests of the artifact rows removed: once committed, the files nobody refers to go too.
  const digests: string[] = [];
  if (runsDays !== null) {
    await drain(hub, opts, async (db) => {
      const r = await removeOldRuns(db, dialect, now - runsDays * DAY_MS, opts.batch);
      into.runs += r.runs;
      into.run_history += r.run_history;
      into.run_logs += r.run_logs;
      into.log_bytes += r.log_bytes;
      into.reviews += r.reviews;
      into.artifacts += r.artifacts;
      digests.push(...r.digests);
      return r.runs;
    });
  }
  if (artifactsDays !== null) {
    await drain(hub, opts, async (db) => {
      const r = await removeOldArtifacts(db, dialect, now - artifactsDays * DAY_MS, opts.batch);
      into.artifacts += r.rows;
      digests.push(...r.digests);
      return r.rows;
    });
  }
  if (opts.store) into.artifact_bytes += await removeFiles(hub, opts.store, digests);
  if (logsDays !== null) {
    await drain(hub, opts, async (db) => {
      const r = await removeOldLogs(db, dialect, now - logsDays * DAY_MS, now, opts.batch);
      into.run_logs += r.rows;
      into.log_bytes += r.bytes;
      return r.runs;
    });
  }
  await drain(hub, opts, async (db) => {
    const n = await removeAckedCommands(db, dialect, now - OUTBOX_KEEP_MS, opts.batch);
    into.command_outbox += n;
    return n;
  });
  await drain(hub, opts, async (db) => {
    const n = await removeFinishedDeliveries(db, dialect, now - OUTBOX_KEEP_MS, opts.batch);
    into.notification_deliveries += n;
    return n;
  });
  await drain(hub, opts, async (db) => {
    const n = await removeOldEvents(db, dialect, now - OUTBOX_KEEP_MS, opts.batch);
    into.events += n;
    return n;
  });
  return into;
}

/**
 * Removes the store's files of `digests` that no artifact row refers to any more; answers the
 * bytes removed. A file another process removed first counts there, not here.
 */
async function removeFiles(hub: Hub, store: ArtifactStore, digests: string[]): Promise<number> {
  let bytes = 0;
  const unique = [...new Set(digests)];
  for (let i = 0; i < unique.length; i += 500) {
    for (const sha256 of await unreferenced(hub.db, unique.slice(i, i + 500))) {
      const s = await store.stat(sha256);
      if (!s) continue;
      await store.remove(sha256);
      bytes += s.size;
    }
  }
  return bytes;
}
