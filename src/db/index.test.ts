import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { PG_URL, TEST_DB, testDatabase } from '../../test/helpers/db.js';
import { migrate, openDatabase } from './index.js';
import { migrations } from './migrations/index.js';

const openFiles = () =>
  readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/self/fd/${fd}`)];
    } catch {
      return [];
    }
  });

describe('openDatabase', () => {
  it('close releases the SQLite file also when no query ever ran', {
    skip: process.platform !== 'linux',
  }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-db-'));
    try {
      const file = path.join(dir, 'x.db');
      const unused = await openDatabase({ url: file });
      assert.ok(openFiles().includes(file));
      await unused.close();
      assert.ok(!openFiles().includes(file));
      const used = await openDatabase({ url: file });
      await used.db.selectNoFrom((eb) => eb.val(1).as('one')).execute();
      await used.close();
      assert.ok(!openFiles().some((f) => f.startsWith(file)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('migrate', () => {
  it('on a current database changes nothing; a missing migration runs, an unknown one is refused', async () => {
    const tdb = testDatabase();
    const d = await openDatabase({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    try {
      const names = async () =>
        (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(d.db)).rows.map(
          (r) => r.name,
        );
      const all = Object.keys(migrations).sort();
      await migrate(d.db);
      assert.deepEqual(await names(), all);
      await migrate(d.db);
      assert.deepEqual(await names(), all);
      // A database one migration behind (the last one undone, its row gone): the migrator runs it.
      const last = all.at(-1)!;
      await migrations[last]!.down!(d.db);
      await sql`delete from kysely_migration where name = ${last}`.execute(d.db);
      assert.deepEqual(await names(), all.slice(0, -1));
      await migrate(d.db);
      assert.deepEqual(await names(), all);
      await sql`insert into kysely_migration (name, timestamp) values ('9999_future', ${new Date().toISOString()})`.execute(
        d.db,
      );
      await assert.rejects(migrate(d.db), /corrupted migrations/);
    } finally {
      await d.close();
      await tdb.cleanup();
    }
  });
});

describe('PostgreSQL session settings', { skip: TEST_DB !== 'postgres' && 'runs on PostgreSQL' }, () => {
  it('applies every `options` of the URL and the schema, none replacing another', async () => {
    const tdb = testDatabase();
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c application_name=svc-probe')}`;
    const d = await openDatabase({ url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    try {
      const r = await sql<{
        app: string;
        path: string;
      }>`select current_setting('application_name') as app, current_setting('search_path') as path`.execute(
        d.db,
      );
      assert.equal(r.rows[0]!.app, 'svc-probe');
      assert.equal(r.rows[0]!.path, tdb.schema);
    } finally {
      await d.close();
      await tdb.cleanup();
    }
  });
});

describe('PostgreSQL: closing the database', { skip: TEST_DB !== 'postgres' && 'runs on PostgreSQL' }, () => {
  it('refuses a query still waiting for a connection, instead of leaving it waiting forever', async () => {
    const tdb = testDatabase();
    const d = await openDatabase({ url: PG_URL, ...(tdb.schema ? { schema: tdb.schema } : {}), poolSize: 1 });
    let finish!: () => void;
    const held = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let began!: () => void;
    const begun = new Promise<void>((resolve) => {
      began = resolve;
    });
    // The pool's one connection stays in this transaction until `finish`.
    const tx = d.db.transaction().execute(async (t) => {
      await sql`select 1`.execute(t);
      began();
      await held;
    });
    try {
      await begun;
      const waiting = sql`select 2`.execute(d.db);
      const closed = d.close();
      await assert.rejects(waiting, /closed/);
      finish();
      await tx;
      await closed;
    } finally {
      finish();
      await tdb.cleanup();
    }
  });
});
