import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { until } from '../../test/helpers/until.js';
import { startCheckpointer } from './checkpointer.js';

describe('WAL checkpoints in a worker thread', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-checkpoint-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const open = (name: string) => {
    const file = path.join(dir, name);
    const sqlite = new SQLite(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.exec('create table t (id integer primary key, body text)');
    return { file, sqlite };
  };
  const autocheckpoint = (sqlite: SQLite.Database) => sqlite.pragma('wal_autocheckpoint', { simple: true });

  it('copies committed pages into the database file while the writer never checkpoints', async () => {
    const { file, sqlite } = open('moved.db');
    const checkpointer = startCheckpointer(sqlite, file, 20, 0);
    try {
      await until('the worker to take over', async () => autocheckpoint(sqlite) === 0);
      const before = statSync(file).size;
      const insert = sqlite.prepare('insert into t (body) values (?)');
      for (let i = 0; i < 200; i++) insert.run('x'.repeat(10_000));
      // Only a checkpoint writes pages into the database file; the writer's own are off.
      await until(
        'the pages to reach the database file',
        async () => statSync(file).size > before + 1_500_000,
      );
    } finally {
      await checkpointer.stop();
    }
    assert.equal(autocheckpoint(sqlite), 1000, 'SQLite checkpoints again once the worker stopped');
    sqlite.close();
  });

  it('leaves the checkpoints to SQLite when the worker cannot open the database', async () => {
    const { sqlite } = open('kept.db');
    const checkpointer = startCheckpointer(sqlite, path.join(dir, 'missing.db'), 20, 0);
    // Timers of the same delay fire in order: the worker has been started when this one fires.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await checkpointer.stop();
    assert.equal(autocheckpoint(sqlite), 1000);
    sqlite.close();
  });

  it('starts no worker when stopped before its start', async () => {
    const { file, sqlite } = open('early.db');
    const checkpointer = startCheckpointer(sqlite, file, 20, 60_000);
    await checkpointer.stop();
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(autocheckpoint(sqlite), 1000, 'SQLite keeps its own checkpoints');
    sqlite.close();
  });
});
