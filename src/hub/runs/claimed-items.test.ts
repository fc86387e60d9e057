import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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
    const claimed = createClaimedItems(2);
    claimed.won('one', a);
    claimed.won('two', a);
    claimed.won('three', a);
    assert.equal(claimed.lostBy('one', b), false);
    assert.equal(claimed.lostBy('two', b), true);
    assert.equal(claimed.lostBy('three', b), true);
  });
});
