import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { digestsEqual, hashSecret, mintToken, TOKEN_PREFIX, tokenHint, tokenKind } from './tokens.js';

describe('token format', () => {
  it('mints typed tokens with a checksum that recognises them', () => {
    for (const kind of Object.keys(TOKEN_PREFIX) as (keyof typeof TOKEN_PREFIX)[]) {
      const t = mintToken(kind);
      assert.ok(t.startsWith(TOKEN_PREFIX[kind]));
      assert.equal(tokenKind(t), kind);
      assert.notEqual(mintToken(kind), t);
    }
  });

  it('refuses a token with one character changed, truncated, or with a foreign prefix', () => {
    const t = mintToken('user');
    const i = t.length - 10;
    const flipped = t.slice(0, i) + (t[i] === 'a' ? 'b' : 'a') + t.slice(i + 1);
    assert.equal(tokenKind(flipped), null);
    assert.equal(tokenKind(t.slice(0, -1)), null);
    assert.equal(tokenKind(`ghp_${t.slice(8)}`), null);
    assert.equal(tokenKind(`${t}!`), null);
  });

  it('hashes with SHA-256 and compares digests in constant time', () => {
    const t = mintToken('daemon');
    assert.match(hashSecret(t), /^[0-9a-f]{64}$/);
    assert.ok(digestsEqual(hashSecret(t), hashSecret(t)));
    assert.ok(!digestsEqual(hashSecret(t), hashSecret(mintToken('daemon'))));
    assert.ok(!digestsEqual('ab', hashSecret(t)));
    assert.equal(tokenHint(t), `svc_dt_…${t.slice(-4)}`);
  });
});
