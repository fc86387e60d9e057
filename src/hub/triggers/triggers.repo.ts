import type { Kysely } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import type { TriggerDeliveriesTable, TriggersTable } from '../../db/schema.js';
import { keysetPage } from '../http/paging.js';

/** Triggers and their deliveries: every query on `triggers` and `trigger_deliveries`. */

export function loadTrigger(db: Kysely<DB>, id: string): Promise<TriggersTable | undefined> {
  return db.selectFrom('triggers').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertTrigger(db: Kysely<DB>, row: TriggersTable): Promise<void> {
  await db.insertInto('triggers').values(row).execute();
}

export async function updateTrigger(db: Kysely<DB>, id: string, set: Partial<TriggersTable>): Promise<void> {
  await db.updateTable('triggers').set(set).where('id', '=', id).execute();
}

export function deleteTrigger(db: Kysely<DB>, id: string): Promise<boolean> {
  return updateOne(db.deleteFrom('triggers').where('id', '=', id));
}

export function listTriggers(db: Kysely<DB>, realmId: string, page: { limit: number; cursor?: string }) {
  return keysetPage(db.selectFrom('triggers').selectAll().where('realm_id', '=', realmId), page);
}

export async function insertDelivery(db: Kysely<DB>, row: TriggerDeliveriesTable): Promise<void> {
  await db.insertInto('trigger_deliveries').values(row).execute();
}

/** The newest deliveries of a trigger, newest first. */
export function recentDeliveries(db: Kysely<DB>, triggerId: string, limit: number) {
  return db
    .selectFrom('trigger_deliveries')
    .select(['id', 'received_at', 'outcome', 'http_status', 'error', 'run_id'])
    .where('trigger_id', '=', triggerId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
