import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunsTable } from '../../db/schema.js';
import { createClaimedItems } from './claimed-items.js';

describe('claimed items', () => {
  const a = { id: 'daemon-a', realm_id: 'realm-1' };
  const b = { id: 'daemon-b', realm_id: 'realm-1' };
  const foreign = { id: 'daemon-c', realm_id: 'realm-2' };

  it('answers that another daemon of the realm lost, never the winner nor another realm', () => {
    const claimed = createClaimedItems();
    assert.equal(claimed.lostBy('item', b), false, 'nothing known yet: the database decides');
    claimed.won('item', a);
    assert.equal(claimed.lostBy('item', b), true);
    assert.equal(claimed.lostBy('item', a), false, 'the winner retrying gets its run from the database');
    assert.equal(
      claimed.lostBy('item', foreign),
      false,
      "another realm's daemon gets not_found from the database",
    );
  });

  it('forgets the oldest items past its bound', () => {
    const claimed = createClaimedItems({ max: 2 });
    claimed.won('one', a);
    claimed.won('two', a);
    claimed.won('three', a);
    assert.equal(claimed.lostBy('one', b), false);
    assert.equal(claimed.lostBy('two', b), true);
    assert.equal(claimed.lostBy('three', b), true);
  });

  it('decides the claims of one item one at a time, in arrival order, other items alongside', async () => {
    const claimed = createClaimedItems();
    const order: string[] = [];
    let release!: () => void;
    const first = claimed.oneAtATime('item', async () => {
      order.push('first starts');
      await new Promise<void>((r) => (release = r));
      order.push('first ends');
      throw new Error('refused');
    });
    const second = claimed.oneAtATime('item', async () => {
      order.push('second');
      return 2;
    });
    const other = claimed.oneAtATime('other', async () => {
      order.push('other item');
      return 3;
    });
    assert.equal(await other, 3);
    assert.deepEqual(order, ['first starts', 'other item']);
    release();
    await assert.rejects(first, /refused/);
    assert.equal(await second, 2, 'a failed claim does not fail the next');
    assert.deepEqual(order, ['first starts', 'other item', 'first ends', 'second']);
  });

  it('keeps an offered run for its item until it is taken, the oldest forgotten past the bound', () => {
    const claimed = createClaimedItems({ maxOffered: 2 });
    const run = (item: string) => ({ run_id: `run-${item}`, queue_item_id: item }) as RunsTable;
    claimed.offered(run('a'));
    claimed.offered(run('b'));
    assert.equal(claimed.takeOffered('a')?.run_id, 'run-a');
    assert.equal(claimed.takeOffered('a'), undefined, 'taken once');
    claimed.offered(run('c'));
    claimed.offered(run('d'));
    assert.equal(claimed.takeOffered('b'), undefined, 'the oldest is forgotten past the bound');
    assert.equal(claimed.takeOffered('d')?.run_id, 'run-d');
    // A large run (its inputs) is not kept: the entries stay small.
    claimed.offered({ ...run('e'), inputs: JSON.stringify({ text: 'x'.repeat(10_000) }) });
    assert.equal(claimed.takeOffered('e'), undefined);
  });
});
