import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { inTx, Rollback, rolledBack } from '../daemons/commands.js';
import { notifyRunChanged, runFeed } from './bus.js';

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
      await notifyRunChanged(tx.db, [{ realm_id: w.realmId, run_id: 'run-kept' }]);
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

  it('writes nothing when the transaction rolls back, even after part of it was sent', async () => {
    const result = await inTx(h.running.hub, async (tx) => {
      for (let n = 0; n < 40; n++) await tx.command(w.daemonId, 'test/undone', { n });
      throw new Rollback();
    }).catch(rolledBack);
    assert.equal(result, null);
    assert.deepEqual(await commandsOf('test/undone'), []);
  });
});
