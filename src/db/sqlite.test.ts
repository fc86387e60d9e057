import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, openDatabase } from './index.js';

describe('SQLite rows', () => {
  let dir: string;
  let database: Database;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-sqlite-'));
    database = await openDatabase({ url: path.join(dir, 'rows.db') });
    await sql`create table t (id integer primary key, name text)`.execute(database.db);
    await sql`insert into t (id, name) values (1, 'one'), (2, 'two')`.execute(database.db);
  });
  after(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('are plain objects keyed by column name, in the order of the columns', async () => {
    const { rows } = await sql<{ id: number; name: string }>`select id, name from t order by id`.execute(
      database.db,
    );
    assert.deepEqual(rows, [
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ]);
    assert.deepEqual(Object.keys(rows[0]!), ['id', 'name']);
  });

  it('keep the last value of a column name given twice, as better-sqlite3 does', async () => {
    const { rows } = await sql`select id as x, name as x from t where id = 1`.execute(database.db);
    assert.deepEqual(rows, [{ x: 'one' }]);
  });

  it('come back from insert … returning and from streamed selects', async () => {
    const inserted = await database.db
      .insertInto('t' as never)
      .values({ id: 3, name: 'three' } as never)
      .returning(['id', 'name'] as never)
      .execute();
    assert.deepEqual(inserted, [{ id: 3, name: 'three' }]);
    const streamed: unknown[] = [];
    for await (const row of database.db
      .selectFrom('t' as never)
      .select(['id', 'name'] as never)
      .orderBy('id' as never)
      .stream())
      streamed.push(row);
    assert.deepEqual(streamed, [
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
      { id: 3, name: 'three' },
    ]);
  });
});
