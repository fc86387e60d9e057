import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_PASSWORD_COST, hashPassword, verifyPassword } from './password.js';

describe('password hashes', () => {
  it('at the default cost: scrypt with N = 2^15, r = 8, p = 1, a 16-byte salt, a 32-byte key', async () => {
    const stored = await hashPassword('correct horse battery');
    const [kind, n, r, p, salt, key] = stored.split('$');
    assert.deepEqual([kind, n, r, p], ['scrypt', String(2 ** DEFAULT_PASSWORD_COST), '8', '1']);
    assert.equal(Buffer.from(salt!, 'base64').length, 16);
    assert.equal(Buffer.from(key!, 'base64').length, 32);
    assert.equal(await verifyPassword('correct horse battery', stored), true);
    assert.equal(await verifyPassword('correct horse batterY', stored), false);
  });

  it('are checked with their own cost, whatever the cost of new ones', async () => {
    const cheap = await hashPassword('pw', 10);
    assert.match(cheap, /^scrypt\$1024\$8\$1\$/);
    assert.equal(await verifyPassword('pw', cheap), true);
    assert.equal(await verifyPassword('pw', cheap, 12), true);
    assert.notEqual(await hashPassword('pw', 10), cheap, 'a new salt each time');
    // A cost whose hashes could not be checked is refused at once.
    for (const cost of [9, 21, 12.5]) await assert.rejects(hashPassword('pw', cost), RangeError);
  });

  it('refuse what is not a hash of theirs, and parameters out of bounds, without deriving them', async () => {
    const good = await hashPassword('pw', 10);
    const [, , , , salt, key] = good.split('$');
    for (const stored of [
      null,
      '',
      'scrypt$x',
      `bcrypt$1024$8$1$${salt}$${key}`,
      `scrypt$1000$8$1$${salt}$${key}`, // N not a power of two
      `scrypt$${2 ** 30}$8$1$${salt}$${key}`, // gigabytes
      `scrypt$1024$64$1$${salt}$${key}`,
      `scrypt$1024$8$0$${salt}$${key}`,
      `scrypt$1024$8$1$${salt}$`,
      `scrypt$1024$8$1$${salt}$${key}$extra`,
    ]) {
      assert.equal(await verifyPassword('pw', stored, 10), false, String(stored));
    }
  });
});
