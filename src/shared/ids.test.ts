import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuidv7 } from './ids.js';

describe('uuidv7', () => {
  it('is a version 7, variant 1 UUID carrying the timestamp', () => {
    const id = uuidv7(0x0123456789ab);
    assert.match(id, /^01234567-89ab-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('sorts in creation order, also many within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7(1_700_000_000_000));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });
});
