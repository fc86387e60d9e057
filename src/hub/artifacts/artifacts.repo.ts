import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { ArtifactsTable } from '../../db/schema.js';

/** Artifact rows (SQL only). */

export function artifactsOfRun(db: Kysely<DB>, runId: string) {
  return db
    .selectFrom('artifacts')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function loadArtifact(db: Kysely<DB>, id: string) {
  return db.selectFrom('artifacts').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUploaded(
  db: Kysely<DB>,
  key: { run_id: string; phase: string; name: string; sha256: string },
) {
  return db
    .selectFrom('artifacts')
    .selectAll()
    .where('run_id', '=', key.run_id)
    .where('phase', '=', key.phase)
    .where('name', '=', key.name)
    .where('sha256', '=', key.sha256)
    .executeTakeFirst();
}

/** Inserts the row unless the same upload made one already; answers the row that stands. */
export async function insertArtifact(db: Kysely<DB>, row: ArtifactsTable): Promise<ArtifactsTable> {
  await db
    .insertInto('artifacts')
    .values(row)
    .onConflict((oc) => oc.columns(['run_id', 'phase', 'name', 'sha256']).doNothing())
    .execute();
  return (await findUploaded(db, row))!;
}

/** Of these digests, the ones no artifact row refers to any more. */
export async function unreferenced(db: Kysely<DB>, digests: string[]): Promise<string[]> {
  if (digests.length === 0) return [];
  const used = await db
    .selectFrom('artifacts')
    .select('sha256')
    .distinct()
    .where('sha256', 'in', digests)
    .execute();
  const still = new Set(used.map((r) => r.sha256));
  return [...new Set(digests)].filter((d) => !still.has(d));
}
