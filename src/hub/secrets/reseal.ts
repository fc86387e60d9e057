import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { Cipher } from '../ports.js';
import { type SealedColumn, sealedNotCurrent, updateSealed } from './secrets.repo.js';

/** Every column that holds a secret at rest, sealed with the hub's cipher. */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: 'secrets', key: 'id', column: 'value' },
  { table: 'hub_keys', key: 'id', column: 'private_jwk' },
  { table: 'notification_channels', key: 'id', column: 'secret' },
  { table: 'triggers', key: 'id', column: 'secret' },
];

const BATCH = 200;

/**
 * Seals again, under the current key, every value that is plain (written before encryption at rest)
 * or sealed under an older key of the ring; runs at every hub start, so a rotation completes when
 * the hubs restart with the new key. Each write is conditional on the value read, so several hub
 * processes doing it at once (or a write meanwhile) never lose a value. Throws when a value is sealed
 * under a key this hub does not have: the hub must not start half-blind. Answers how many values
 * were sealed again.
 */
export async function resealAll(db: Kysely<DB>, cipher: Cipher): Promise<number> {
  let total = 0;
  for (const col of SEALED_COLUMNS) {
    // Keyset paging on the row key: a value that could not be written (changed meanwhile) is
    // current already or will be sealed by whoever changed it, so the pass never loops.
    let after = '';
    for (;;) {
      const rows = await sealedNotCurrent(db, col, cipher.currentPrefix(), after, BATCH);
      for (const r of rows) {
        const sealed = cipher.seal(cipher.reveal(r.value));
        if (await updateSealed(db, col, r.key, r.value, sealed)) total++;
      }
      if (rows.length < BATCH) break;
      after = rows[rows.length - 1]!.key;
    }
  }
  return total;
}
