import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { TEST_DB, type TestDatabase, testDatabase } from '../../test/helpers/db.js';
import { type Database, openDatabaseOf } from './index.js';
import { entriesOf, oneOf, prepared, preparedQuery, statementName } from './prepared.js';
import { together } from './together.js';
import { clearOnWrite } from './watch-writes.js';

interface Things {
  things: { id: string; kind: string; n: number };
}

const byKind = prepared((db: Kysely<Things>, kind: string, min: number) =>
  db
    .selectFrom('things')
    .select(['id', 'n'])
    .where('kind', '=', kind)
    .where('n', '>=', min)
    .where('id', '!=', 'never')
    .orderBy('id'),
);

describe('prepared queries', () => {
  let tdb: TestDatabase;
  let d: Database<Things>;
  before(async () => {
    tdb = testDatabase();
    d = await openDatabaseOf<Things>({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    await d.db.schema
      .createTable('things')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('n', 'integer', (c) => c.notNull())
      .execute();
    await d.db
      .insertInto('things')
      .values([
        { id: 'a', kind: 'x', n: 1 },
        { id: 'b', kind: 'x', n: 2 },
        { id: 'c', kind: 'y', n: 3 },
        { id: 'never', kind: 'x', n: 9 },
      ])
      .execute();
  });
  after(async () => {
    await d.close();
    await tdb.cleanup();
  });

  it('binds new values at each call and keeps the constants of the query', async () => {
    assert.deepEqual(await byKind(d.db, 'x', 0), [
      { id: 'a', n: 1 },
      { id: 'b', n: 2 },
    ]);
    assert.deepEqual(await byKind(d.db, 'x', 2), [{ id: 'b', n: 2 }]);
    assert.deepEqual(await byKind(d.db, 'y', 0), [{ id: 'c', n: 3 }]);
    assert.deepEqual(await byKind(d.db, 'z', 0), []);
  });

  it('runs in a transaction, seeing its writes', async () => {
    await d.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('things').values({ id: 'd', kind: 'y', n: 4 }).execute();
        assert.deepEqual(await byKind(trx, 'y', 4), [{ id: 'd', n: 4 }]);
        throw new Error('undo');
      })
      .catch(() => {});
    assert.deepEqual(await byKind(d.db, 'y', 4), []);
  });

  it('binds a list of any length as one parameter (oneOf)', async () => {
    const byIds = prepared((db: Kysely<Things>, ids: string[]) =>
      db
        .selectFrom('things')
        .select('id')
        .where(oneOf(db, 'id', ids))
        .orderBy('id'),
    );
    assert.deepEqual(await byIds(d.db, ['c', 'a', 'missing']), [{ id: 'a' }, { id: 'c' }]);
    assert.deepEqual(await byIds(d.db, ['b']), [{ id: 'b' }]);
    assert.deepEqual(await byIds(d.db, []), []);
    // Values are data, never SQL.
    assert.deepEqual(await byIds(d.db, ["a') or ('1'='1", '"b"', 'x"]']), []);
  });

  it('bound without running, goes with other statements (together), each with its own values', async () => {
    const query = preparedQuery((db: Kysely<Things>, kind: string) =>
      db.selectFrom('things').select('id').where('kind', '=', kind).orderBy('id'),
    );
    const [xs, ys] = await together(d.db, [query(d.db, 'x'), query(d.db, 'y')]);
    assert.deepEqual(xs, [{ id: 'a' }, { id: 'b' }, { id: 'never' }]);
    assert.deepEqual(ys, [{ id: 'c' }]);
    assert.deepEqual(await query(d.db, 'y').execute(), [{ id: 'c' }]);
  });

  it('on PostgreSQL gives its text with the parameters numbered from where another statement left off', {
    skip: TEST_DB !== 'postgres' && 'a statement is made of others on PostgreSQL only',
  }, async () => {
    const setN = preparedQuery((db: Kysely<Things>, id: string, n: number) =>
      db.updateTable('things').set({ n }).where('id', '=', id).where('kind', '=', 'x'),
    );
    const part = setN(d.db, 'a', 5).pgText!(3);
    assert.equal(part.text, 'update "things" set "n" = $3 where "id" = $4 and "kind" = $5');
    assert.deepEqual(part.parameters, [5, 'a', 'x'], 'the values bound, the constant of the query with them');
  });

  it('pairs values bound as one JSON object (entriesOf), in a statement of one shape', async () => {
    const setN = preparedQuery((db: Kysely<Things>, ns: string) =>
      db
        .updateTable('things')
        .from(entriesOf(db, ns).as('e'))
        .set({ n: sql<number>`cast(${sql.ref('e.value')} as integer)` })
        .where(sql<boolean>`${sql.ref('things.id')} = ${sql.ref('e.key')}`),
    );
    await setN(d.db, JSON.stringify({ a: '10', c: '30', missing: '99' })).execute();
    await setN(d.db, JSON.stringify({ b: '20' })).execute();
    const rows = await d.db.selectFrom('things').select(['id', 'n']).orderBy('id').execute();
    assert.deepEqual(rows, [
      { id: 'a', n: 10 },
      { id: 'b', n: 20 },
      { id: 'c', n: 30 },
      { id: 'never', n: 9 },
    ]);
    // Keys are data, never SQL.
    await setN(d.db, JSON.stringify({ "a' or '1'='1": '0' })).execute();
    assert.equal(
      (await d.db.selectFrom('things').select('n').where('id', '=', 'a').executeTakeFirst())?.n,
      10,
    );
  });

  it('shows each run of a write to the plugins, as a built query, so that caches cleared by writes see it', async () => {
    let clears = 0;
    const watched = d.db.withPlugin(clearOnWrite({ things: ['n'] }, () => clears++));
    const bump = preparedQuery((db: Kysely<Things>, id: string) =>
      db.updateTable('things').set({ n: sql<number>`n + 1` }).where('id', '=', id),
    );
    await bump(watched, 'never').execute(); // compiles it
    // Cleared when the write is about to run and again once it has run, at every call.
    clears = 0;
    await bump(watched, 'never').execute();
    assert.equal(clears, 2);
    await watched.transaction().execute((trx) => bump(trx, 'never').execute());
    assert.equal(clears, 4);
    // A read clears nothing.
    await byKind(watched, 'x', 0);
    assert.equal(clears, 4);
  });

  it('refuses a query that uses an argument other than as a parameter', async () => {
    const shaped = prepared((db: Kysely<Things>, kind: string) =>
      db
        .selectFrom('things')
        .select('id')
        .$if(kind === 'x', (q) => q.where('kind', '=', 'x')),
    );
    await assert.rejects(shaped(d.db, 'x'), /binds some argument other than as a parameter/);
  });

  it('is a named statement on PostgreSQL, parsed once per connection', {
    skip: TEST_DB !== 'postgres' && 'PostgreSQL only',
  }, async () => {
    await d.db.connection().execute(async (c) => {
      await byKind(c, 'x', 0);
      await byKind(c, 'y', 1);
      const { rows } = await sql<{ name: string; statement: string }>`
        select name, statement from pg_prepared_statements`.execute(c);
      const named = rows.filter((r) => r.statement.includes('"n" >= $2'));
      assert.equal(named.length, 1, JSON.stringify(rows));
      assert.equal(statementName(named[0]!.statement), named[0]!.name);
    });
  });
});
