import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { type TestDatabase, testDatabase } from '../../test/helpers/db.js';
import { type Database, openDatabaseOf } from './index.js';
import { together } from './together.js';

interface Counters {
  counters: { name: string; n: number };
}

/** Statements sent together answer as they would one by one, on either database. */
describe('statements together', () => {
  let tdb: TestDatabase;
  let d: Database<Counters>;
  before(async () => {
    tdb = testDatabase();
    d = await openDatabaseOf<Counters>({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    await d.db.schema
      .createTable('counters')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('n', 'integer', (c) => c.notNull())
      .execute();
  });
  after(async () => {
    await d.close();
    await tdb.cleanup();
  });

  const bump = (db: Kysely<Counters>, name: string, by: number) =>
    db
      .insertInto('counters')
      .values({ name, n: by })
      .onConflict((oc) =>
        oc.column('name').doUpdateSet((eb) => ({ n: eb('counters.n', '+', eb.ref('excluded.n')) })),
      )
      .returning('n');
  const all = (db: Kysely<Counters>) => db.selectFrom('counters').select(['name', 'n']).orderBy('name');

  it("answers each statement's rows in order, in a transaction that sees its own writes", async () => {
    const rows = await d.db.transaction().execute(async (trx) => {
      await trx.insertInto('counters').values({ name: 'a', n: 1 }).execute();
      return together(trx, [
        bump(trx, 'a', 2),
        bump(trx, 'b', 5),
        all(trx),
        all(trx).where('name', '=', 'none'),
      ]);
    });
    assert.deepEqual(rows, [
      [{ n: 3 }],
      [{ n: 5 }],
      [
        { name: 'a', n: 3 },
        { name: 'b', n: 5 },
      ],
      [],
    ]);
    assert.deepEqual(await together(d.db, []), []);
    assert.deepEqual(await together(d.db, [all(d.db).where('name', '=', 'b')]), [[{ name: 'b', n: 5 }]]);
  });

  it('a statement that fails fails the call, and its transaction is undone whole', async () => {
    await assert.rejects(
      d.db.transaction().execute(async (trx) => {
        await together(trx, [
          bump(trx, 'a', 10),
          trx.insertInto('counters').values({ name: 'b', n: 0 }),
          bump(trx, 'c', 1),
        ]);
      }),
      /unique|UNIQUE/,
    );
    assert.deepEqual(await all(d.db).execute(), [
      { name: 'a', n: 3 },
      { name: 'b', n: 5 },
    ]);
  });
});
