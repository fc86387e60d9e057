import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import type { DB } from '../../db/index.js';
import { preparedQuery } from '../../db/prepared.js';
import { AppError } from '../../shared/errors.js';
import { inTx, Rollback, rolledBack } from '../daemons/commands.js';
import { expectOne, insertRows, notifyRunLogged, runFeed, writeThenNotify } from './bus.js';

/**
 * A transaction's writes that nothing reads back (commands here) and its notices: kept for one
 * statement before the commit on PostgreSQL, written at once on SQLite. Either way they commit or
 * roll back with the transaction, however many there are.
 */
describe('writes kept until the commit', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  const commandsOf = async (path: string) =>
    (
      await h.running.hub.db
        .selectFrom('command_outbox')
        .select('body')
        .where('daemon_id', '=', w.daemonId)
        .where('path', '=', path)
        .orderBy('seq')
        .execute()
    ).map((r) => (JSON.parse(r.body) as { n: number }).n);

  it('commits every write of a large transaction, in order, with its notices', async () => {
    // The change notice: on SQLite told once the transaction has committed and its caller has gone
    // on, so the event streams' reads never come before what the transaction sends (an offer, a
    // reply); on PostgreSQL heard through LISTEN, after the commit, and told once the turn it was
    // heard in is over (the commit's own reply, when read in that turn, goes on first).
    let committed = false;
    const heard = new Promise<boolean>((resolve) => {
      const onChange = (_realm: string, run: string) => {
        if (run !== 'run-kept') return;
        runFeed.off('change', onChange);
        resolve(committed);
      };
      runFeed.on('change', onChange);
    });
    // More writes than one statement takes: they go in several, all in the transaction.
    await inTx(h.running.hub, async (tx) => {
      for (let n = 0; n < 40; n++) await tx.command(w.daemonId, 'test/kept', { n });
      await notifyRunLogged(tx.db, [{ realm_id: w.realmId, run_id: 'run-kept' }]);
    });
    committed = true;
    assert.deepEqual(
      await commandsOf('test/kept'),
      Array.from({ length: 40 }, (_, n) => n),
    );
    const toldAfter = await heard;
    if (h.running.hub.dialect === 'sqlite') {
      assert.equal(toldAfter, true, 'the change was told before the caller of its transaction went on');
    }
  });

  it('writes the rows of several inserts in one statement, each value in its own column', async () => {
    const stamp = Date.now().toString(36);
    const ids = [0, 1, 2].map((i) => `event-${stamp}-${i}`);
    const events = ids.map((id, i) => ({
      id,
      type: `test.kept.${i}`,
      org_id: null,
      realm_id: w.realmId,
      subject_id: `subject-${i}`,
      payload: JSON.stringify({ i }),
      created_at: 1_000 + i,
    }));
    await inTx(h.running.hub, async (tx) => {
      await writeThenNotify(tx.db, [insertRows(tx.db as Kysely<DB>, 'events', events)], []);
      await tx.command(w.daemonId, 'test/columns', { n: 7 });
    });
    const rows = await h.running.hub.db
      .selectFrom('events')
      .select(['id', 'type', 'org_id', 'realm_id', 'subject_id', 'payload', 'created_at'])
      .where('id', 'in', ids)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      rows.map((r) => ({ ...r, created_at: Number(r.created_at) })),
      events,
    );
    assert.deepEqual(await commandsOf('test/columns'), [7]);
  });

  it('a prepared write goes with the inserts, its parameters numbered after theirs', async () => {
    const stamp = Date.now().toString(36);
    const row = (id: string, type: string) => ({
      id,
      type,
      org_id: null,
      realm_id: w.realmId,
      subject_id: 'subject',
      payload: '{}',
      created_at: 1,
    });
    const retype = preparedQuery((db: Kysely<DB>, id: string, type: string) =>
      db.updateTable('events').set({ type }).where('id', '=', id),
    );
    await writeThenNotify(
      h.running.hub.db,
      [insertRows(h.running.hub.db, 'events', [row(`a-${stamp}`, 'before')])],
      [],
    );
    await inTx(h.running.hub, async (tx) => {
      const db = tx.db as Kysely<DB>;
      await writeThenNotify(
        db,
        [
          insertRows(db, 'events', [row(`b-${stamp}`, 'new')]),
          retype(db, `a-${stamp}`, 'after'),
          insertRows(db, 'events', [row(`c-${stamp}`, 'newer')]),
        ],
        [],
      );
    });
    const rows = await h.running.hub.db
      .selectFrom('events')
      .select(['id', 'type'])
      .where(
        'id',
        'in',
        ['a', 'b', 'c'].map((x) => `${x}-${stamp}`),
      )
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rows.map((r) => r.type),
      ['after', 'new', 'newer'],
    );
  });

  it('writes nothing when the transaction rolls back, even after part of it was sent', async () => {
    const result = await inTx(h.running.hub, async (tx) => {
      for (let n = 0; n < 40; n++) await tx.command(w.daemonId, 'test/undone', { n });
      throw new Rollback();
    }).catch(rolledBack);
    assert.equal(result, null);
    assert.deepEqual(await commandsOf('test/undone'), []);
  });

  it('a guarded write that changes no row refuses its whole transaction, wherever it is sent', async () => {
    const hub = h.running.hub;
    const txId = await inTx(hub, (tx) => tx.command(w.daemonId, 'test/guarded', { n: 0 }));
    const move = (db: Kysely<DB>, from: 'pending' | 'acked', path: string) =>
      db
        .updateTable('command_outbox')
        .set({ path })
        .where('tx_id', '=', txId)
        .where('status', '=', from)
        .returning('tx_id');
    const refused = (err: unknown) =>
      err instanceof AppError && err.code === 'conflict' && err.message === 'the command changed meanwhile';
    // Followed by a read (on PostgreSQL the write leaves with it), then by the commit alone.
    for (const readAfter of [true, false]) {
      await assert.rejects(
        inTx(hub, async (tx) => {
          await tx.command(w.daemonId, 'test/guarded-before', { n: 1 });
          await expectOne(tx.db, move(tx.db, 'acked', 'test/moved'), 'the command changed meanwhile');
          if (readAfter) await tx.db.selectFrom('command_outbox').select('tx_id').execute();
          await tx.command(w.daemonId, 'test/guarded-after', { n: 2 });
        }),
        refused,
      );
    }
    assert.deepEqual(await commandsOf('test/guarded-before'), []);
    assert.deepEqual(await commandsOf('test/guarded-after'), []);
    assert.deepEqual(await commandsOf('test/moved'), []);
    // A write that applies: what follows it in the transaction sees the row as it wrote it.
    const seen = await inTx(hub, async (tx) => {
      await expectOne(tx.db, move(tx.db, 'pending', 'test/moved'), 'the command changed meanwhile');
      return (
        await tx.db
          .selectFrom('command_outbox')
          .select('path')
          .where('tx_id', '=', txId)
          .executeTakeFirstOrThrow()
      ).path;
    });
    assert.equal(seen, 'test/moved');
    assert.deepEqual(await commandsOf('test/moved'), [0]);
    // Outside a transaction that keeps its writes it runs at once, and refuses at once.
    await assert.rejects(
      expectOne(hub.db, move(hub.db, 'acked', 'test/never'), 'the command changed meanwhile'),
      refused,
    );
  });
});
