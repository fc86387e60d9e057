import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunLogLine } from '../../shared/protocol.js';

/** A run's log lines (SQL), numbered 1, 2, … per run. */

/** Appends lines after the run's last one; answers the last sequence number. Run it in a transaction. */
export async function appendLogLines(db: Kysely<DB>, runId: string, lines: RunLogLine[], now: number) {
  const last = await db
    .selectFrom('run_logs')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('run_id', '=', runId)
    .executeTakeFirst();
  let seq = Number(last?.seq ?? 0);
  if (lines.length > 0) {
    await db
      .insertInto('run_logs')
      .values(
        lines.map((l) => ({
          run_id: runId,
          seq: ++seq,
          at: l.at ?? now,
          stream: l.stream,
          phase: l.phase ?? null,
          text: l.text,
        })),
      )
      .execute();
  }
  return seq;
}

/** Up to `limit + 1` lines after `after`, oldest first (the extra one tells there are more). */
export function logLinesAfter(db: Kysely<DB>, runId: string, after: number, limit: number) {
  return db
    .selectFrom('run_logs')
    .select(['seq', 'at', 'stream', 'phase', 'text'])
    .where('run_id', '=', runId)
    .where('seq', '>', after)
    .orderBy('seq')
    .limit(limit + 1)
    .execute();
}
