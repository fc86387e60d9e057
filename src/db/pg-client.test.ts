import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { PG_URL, TEST_DB } from '../../test/helpers/db.js';
import { dropSchema, openDatabase } from './index.js';
import { pgParts, pipelinedClient, TOGETHER, WITH_NEXT } from './pg-client.js';

/**
 * The pipelined client against a real server: the round trips it saves (counted as the server's
 * ReadyForQuery replies, one per round trip), and that the server ends up exactly where the same
 * statements sent one by one would leave it, failures included.
 */
describe('pipelined PostgreSQL client', { skip: TEST_DB !== 'postgres' }, () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const parts = pgParts(pg);
  let pool: pg.Pool;

  before(async () => {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    // The URL's own `options` would win over the config's (see index.ts): they move into the config.
    const url = new URL(PG_URL);
    const options = [...url.searchParams.getAll('options'), `-c search_path=${schema}`].join(' ');
    url.searchParams.delete('options');
    pool = new pg.Pool({ connectionString: url.toString(), options, max: 3, types: parts.types });
    await pool.query('create table t (id int primary key, v text, n bigint)');
  });
  after(async () => {
    await pool.end();
    await dropSchema(PG_URL, schema);
  });

  /**
   * Runs `fn` with a pipelined client on a connection of its own, which counts the round trips it
   * made since; then releases the connection and empties the table.
   */
  async function withClient(
    fn: (c: {
      query: (text: string, values?: unknown[]) => Promise<pg.QueryResult>;
      trips: () => number;
    }) => Promise<void>,
  ) {
    const raw = await pool.connect();
    let trips = 0;
    const connection = (raw as unknown as { connection: EventEmitter }).connection;
    const count = () => trips++;
    connection.on('readyForQuery', count);
    const client = pipelinedClient(raw, parts);
    try {
      await fn({
        query: client.query as unknown as (text: string, values?: unknown[]) => Promise<pg.QueryResult>,
        trips: () => trips,
      });
    } finally {
      connection.off('readyForQuery', count);
      client.release();
      await pool.query('delete from t');
    }
  }
  const ids = async () => (await pool.query('select id from t order by id')).rows.map((r) => r.id);

  it("sends a transaction's begin with its first statement, and statements kept for the next one with the commit", async () => {
    await withClient(async (c) => {
      await c.query('begin');
      assert.equal(c.trips(), 0);
      const first = await c.query('insert into t values ($1, $2, $3) returning id, n', [1, 'a', 5]);
      assert.deepEqual(first.rows, [{ id: 1, n: 5 }]);
      assert.equal(first.rowCount, 1);
      assert.equal(c.trips(), 1);
      const second = await c.query('select count(*)::int as k from t');
      assert.deepEqual(second.rows, [{ k: 1 }]);
      assert.equal(c.trips(), 2);
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [2, 'b', 6]);
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [3, 'c', 7]);
      assert.equal(c.trips(), 2, 'kept writes are not sent before another statement or the commit');
      assert.deepEqual(await ids(), [], 'nothing is visible before the commit');
      await c.query('commit');
      assert.equal(c.trips(), 3);
      assert.deepEqual(await ids(), [1, 2, 3]);
    });
  });

  it('statements kept for the next one leave with it, in order, and one that fails fails it', async () => {
    await withClient(async (c) => {
      await c.query('begin');
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [1, 'a', 5]);
      await c.query(`${WITH_NEXT}update t set n = n + 1 where id = $1`, [1]);
      assert.equal(c.trips(), 0, 'nothing leaves before a statement that is waited for');
      const read = await c.query('select n from t where id = $1', [1]);
      assert.deepEqual(read.rows, [{ n: 6 }], 'the read sees the kept writes, made in order before it');
      assert.equal(c.trips(), 1, 'begin, the kept writes and the read in one round trip');
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [2, 'b', 0]);
      const together = await c.query(TOGETHER, [[{ text: 'select count(*)::int as k from t', values: [] }]]);
      assert.deepEqual(together.rows, [[{ k: 2 }]]);
      assert.equal(c.trips(), 2);
      await c.query('commit');
      assert.deepEqual(await ids(), [1, 2]);
      // A kept write that fails: the statement it left with fails with its error, and the rollback
      // undoes the whole transaction.
      await c.query('begin');
      await c.query('insert into t values ($1, $2, $3)', [3, 'c', 0]);
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [1, 'dup', 0]);
      await assert.rejects(c.query('select n from t where id = $1', [3]), { code: '23505' });
      await c.query('rollback');
      assert.deepEqual(await ids(), [1, 2]);
      assert.deepEqual((await c.query('select 1 as one')).rows, [{ one: 1 }]);
    });
  });

  it("statements sent together leave in one round trip, with the transaction's begin", async () => {
    await withClient(async (c) => {
      await c.query('begin');
      const together = await c.query(TOGETHER, [
        [
          { text: 'insert into t values ($1, $2, $3) returning id', values: [1, 'a', 5] },
          { text: 'select n from t where id = $1', values: [1] },
          { text: 'select n from t where id = $1', values: [2] },
        ],
      ]);
      assert.deepEqual(together.rows, [[{ id: 1 }], [{ n: 5 }], []]);
      assert.equal(c.trips(), 1);
      const more = await c.query(TOGETHER, [[{ text: 'select count(*)::int as k from t', values: [] }]]);
      assert.deepEqual(more.rows, [[{ k: 1 }]]);
      assert.equal(c.trips(), 2);
      await c.query('commit');
      assert.equal(c.trips(), 3);
      assert.deepEqual(await ids(), [1]);
      // One that fails: the rest is skipped, the call fails, the rollback undoes what went before it.
      await c.query('begin');
      await assert.rejects(
        c.query(TOGETHER, [
          [
            { text: 'insert into t values ($1, $2, $3)', values: [2, 'b', 0] },
            { text: 'insert into t values ($1, $2, $3)', values: [1, 'again', 0] },
            { text: 'insert into t values ($1, $2, $3)', values: [3, 'c', 0] },
          ],
        ]),
        /duplicate key/,
      );
      await c.query('rollback');
      assert.deepEqual(await ids(), [1]);
    });
  });

  it('a transaction that runs nothing sends nothing; one that only keeps writes sends one round trip', async () => {
    await withClient(async (c) => {
      await c.query('begin');
      await c.query('commit');
      await c.query('begin');
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [9, 'x', 1]);
      await c.query('rollback');
      assert.equal(c.trips(), 0);
      assert.deepEqual(await ids(), []);
      await c.query('begin');
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [4, 'd', 1]);
      await c.query('commit');
      assert.equal(c.trips(), 1);
      assert.deepEqual(await ids(), [4]);
      // Outside a transaction the mark changes nothing: the statement runs at once.
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [5, 'e', 1]);
      assert.deepEqual(await ids(), [4, 5]);
    });
  });

  it('a failed first statement fails its call; the rollback then leaves the connection usable', async () => {
    await pool.query(`insert into t values (1, 'a', 1)`);
    await withClient(async (c) => {
      await c.query('begin');
      await assert.rejects(c.query('insert into t values ($1, $2, $3)', [1, 'dup', 1]), { code: '23505' });
      await c.query('rollback');
      const after = await c.query('select count(*)::int as k from t');
      assert.deepEqual(after.rows, [{ k: 1 }]);
      // A new transaction on the same connection begins afresh.
      await c.query('begin');
      await c.query('insert into t values ($1, $2, $3)', [2, 'b', 1]);
      await c.query('commit');
      assert.deepEqual(await ids(), [1, 2]);
    });
  });

  it('a write that fails at the commit fails the commit, and the whole transaction is undone', async () => {
    await pool.query(`insert into t values (1, 'a', 1)`);
    await withClient(async (c) => {
      await c.query('begin');
      await c.query('insert into t values ($1, $2, $3)', [10, 'kept?', 1]);
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [11, 'fine', 1]);
      await c.query(`${WITH_NEXT}insert into t values ($1, $2, $3)`, [1, 'dup', 1]);
      await assert.rejects(c.query('commit'), { code: '23505' });
      await c.query('rollback');
      assert.deepEqual(await ids(), [1]);
      assert.deepEqual((await c.query('select 1 as one')).rows, [{ one: 1 }]);
    });
  });

  it("values travel as they do one by one, and rows are parsed with the pool's types", async () => {
    await withClient(async (c) => {
      await c.query('begin');
      const row = (
        await c.query(
          `select $1::bigint as big, $2::jsonb as doc, $3::text as nothing, $4::boolean as yes,
                    $5::bytea as bytes, 'b' = any($6) as listed`,
          [2 ** 40, { a: [1, 'x'] }, null, true, Buffer.from([0, 255]), ['a', 'b']],
        )
      ).rows[0];
      await c.query('commit');
      assert.deepEqual(row, {
        big: 2 ** 40,
        doc: { a: [1, 'x'] },
        nothing: null,
        yes: true,
        bytes: Buffer.from([0, 255]),
        listed: true,
      });
    });
  });

  it('a value that cannot be sent fails its call alone', async () => {
    await withClient(async (c) => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await c.query('begin');
      await assert.rejects(c.query('select $1::jsonb as doc', [cyclic]), TypeError);
      await c.query('rollback');
      assert.equal(c.trips(), 0, 'nothing was sent');
      assert.deepEqual((await c.query('select 1 as one')).rows, [{ one: 1 }]);
    });
  });

  it('through Kysely: transactions at once on a small pool each commit or roll back whole', async () => {
    const d = await openDatabase({ url: PG_URL, schema, poolSize: 3 });
    await pool.query(`insert into t values (1, 'there before', 0)`);
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, (_, i) =>
          d.db.transaction().execute(async (trx) => {
            await sql`insert into t values (${100 + i}, 'k', ${i})`.execute(trx);
            await trx.executeQuery(
              // Every third transaction's kept write collides with a row that was there before.
              sql`${sql.raw(WITH_NEXT)}insert into t values (${i % 3 === 2 ? 1 : 200 + i}, 'w', 0)`.compile(
                trx,
              ),
            );
          }),
        ),
      );
      const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
      assert.deepEqual(
        failed,
        Array.from({ length: 10 }, (_, k) => 3 * k + 2),
      );
      const kept = (await sql<{ id: number }>`select id from t order by id`.execute(d.db)).rows.map(
        (r) => r.id,
      );
      const expected = [
        1,
        ...results.flatMap((r, i) => (r.status === 'fulfilled' ? [100 + i, 200 + i] : [])),
      ];
      assert.deepEqual(
        kept,
        expected.sort((a, b) => a - b),
      );
    } finally {
      await d.close();
      await pool.query('delete from t');
    }
  });

  it('prepares a statement by name once it recurs, alone or in a pipeline, and never one with a * result (count(*) is none)', async () => {
    const prepared = async (c: { query: (t: string, v?: unknown[]) => Promise<pg.QueryResult> }) =>
      (await c.query('select statement from pg_prepared_statements order by statement')).rows.map(
        (r: { statement: string }) => r.statement,
      );
    // Texts of this test alone (the pool's connections have run others).
    const tag = randomBytes(4).toString('hex');
    const insert = `insert into t values ($1, $2, $3) -- ${tag}`;
    const starred = `select * from t where id = $1 -- ${tag}`;
    const counted = `select id, (select count(*) from t) as n from t where id = $1 -- ${tag}`;
    await withClient(async (c) => {
      for (let i = 0; i < 4; i++) {
        await c.query(insert, [i, 'one', i]);
        assert.equal((await c.query(starred, [i])).rows[0].v, 'one');
        assert.equal((await c.query(counted, [i])).rows[0].id, i);
      }
      // In pipelines: with a transaction's first statement and with its commit.
      for (let i = 4; i < 8; i++) {
        await c.query('begin');
        await c.query(insert, [i, 'first', i]);
        await c.query(`${WITH_NEXT}${insert}`, [100 + i, 'kept', i]);
        await c.query('commit');
      }
      const names = await prepared(c);
      assert.deepEqual(
        names.filter((t) => t.includes(tag)),
        [`${WITH_NEXT}${insert}`, counted, insert].sort(),
        'each recurring text is prepared once on the connection',
      );
      assert.ok(!names.includes(starred), 'a * result is never prepared');
      assert.equal((await c.query('select count(*)::int as k from t')).rows[0].k, 12);
    });
  });

  it('a named statement that fails to parse, or is skipped after an error, is prepared again next time', async () => {
    const bad = `insert into t valuez ($1) -- ${randomBytes(4).toString('hex')}`;
    const good = `insert into t values ($1, $2, $3) -- ${randomBytes(4).toString('hex')}`;
    await withClient(async (c) => {
      for (let i = 0; i < 3; i++) {
        // The bad statement fails at its parse, and the good one after it is skipped, in one pipeline.
        await c.query('begin');
        await c.query(`${WITH_NEXT}${bad}`, [i]);
        await c.query(`${WITH_NEXT}${good}`, [10 + i, 'skipped', 0]);
        await assert.rejects(c.query('commit'), { code: '42601' });
        await c.query('rollback');
      }
      for (let i = 0; i < 3; i++) {
        await c.query('begin');
        await c.query(`${WITH_NEXT}${good}`, [20 + i, 'kept', 0]);
        await c.query('commit');
      }
      assert.deepEqual(await ids(), [20, 21, 22]);
    });
  });

  it("a named statement's rows, made by its kept shape, are pg's own rows", async () => {
    const tag = randomBytes(4).toString('hex');
    // Types the pool parses, nulls, a repeated column name (the last value wins, as in pg's rows).
    const text = `select $1::bigint as big, $2::jsonb as doc, $3::text as nothing, $4::boolean as yes,
      $5::bytea as bytes, array[$6::text] as list, $7::int as n, 1 as n -- ${tag}`;
    const values = [2 ** 40, { a: [1, 'x'] }, null, true, Buffer.from([0, 255]), 'a', 7];
    const expected = (await pool.query(text, values)).rows[0];
    assert.equal(expected.n, 1);
    await withClient(async (c) => {
      for (let i = 0; i < 4; i++) {
        const row = (await c.query(text, values)).rows[0];
        assert.deepEqual(row, expected, `run ${i + 1}`);
        assert.deepEqual(Object.keys(row), Object.keys(expected), 'the columns in their order');
      }
      const names = (await c.query('select statement from pg_prepared_statements')).rows.map(
        (r: { statement: string }) => r.statement,
      );
      assert.ok(names.includes(text), 'the statement ran by name');
      // A column named __proto__ is an own property, as pg makes it, and the prototype is untouched.
      const proto = `select 1 as "__proto__", 2 as other -- ${tag}`;
      for (let i = 0; i < 3; i++) {
        const row = (await c.query(proto)).rows[0];
        assert.ok(Object.hasOwn(row, '__proto__'));
        assert.equal(Object.getPrototypeOf(row), Object.prototype);
        assert.equal(row.other, 2);
      }
    });
  });

  it("a named statement's kept shape follows a column whose type changed", async () => {
    const tag = randomBytes(4).toString('hex');
    await pool.query(`create table shaped_${tag} (id int, v int)`);
    await pool.query(`insert into shaped_${tag} values (1, 5)`);
    const text = `select id, v from shaped_${tag} where id = $1`;
    await withClient(async (c) => {
      for (let i = 0; i < 3; i++) assert.deepEqual((await c.query(text, [1])).rows, [{ id: 1, v: 5 }]);
    });
    await pool.query(`alter table shaped_${tag} alter column v type jsonb using to_jsonb(v)`);
    // Connections that prepare it anew answer the new type (a connection that prepared it before is
    // refused by the server: a prepared statement's result may not change).
    const fresh = new pg.Pool({
      connectionString: pool.options.connectionString,
      options: pool.options.options,
      max: 1,
      types: parts.types,
    });
    try {
      const raw = await fresh.connect();
      const client = pipelinedClient(raw, parts);
      const query = client.query as unknown as (t: string, v?: unknown[]) => Promise<pg.QueryResult>;
      try {
        for (let i = 0; i < 3; i++) {
          await pool.query(`update shaped_${tag} set v = $1`, [{ i }]);
          assert.deepEqual((await query(text, [1])).rows, [{ id: 1, v: { i } }]);
        }
      } finally {
        client.release();
      }
    } finally {
      await fresh.end();
      await pool.query(`drop table shaped_${tag}`);
    }
  });
});
