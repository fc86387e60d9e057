import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import { getSetting } from '../settings/settings.repo.js';

/** The deployment settings of runs (docs/configuration.md). */

export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_MAX_CALL_DEPTH = 8;

async function intSetting(hub: { db: Kysely<DB> }, key: string, fallback: number, min: number) {
  const raw = await getSetting(hub, key);
  const n = raw === null ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n >= min ? n : fallback;
}
export const leaseMsOf = (hub: { db: Kysely<DB> }) => intSetting(hub, 'runs.lease_ms', DEFAULT_LEASE_MS, 100);
export const maxCallDepthOf = (hub: { db: Kysely<DB> }) =>
  intSetting(hub, 'runs.max_call_depth', DEFAULT_MAX_CALL_DEPTH, 0);
