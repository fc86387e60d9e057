import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { newKey, parseKey } from '../../shared/secret-key.js';
import { createCipher, keyId, SealError } from './cipher.js';
import { keyFilePath, loadKeyRing, readKeyFile, rotateKeyFile } from './keys.js';

describe('the cipher (AES-256-GCM, key id with each value)', () => {
  const a = newKey();
  const b = newKey();

  it('seals to text that names its key and opens to the value; never the same text twice', () => {
    const c = createCipher([a]);
    const one = c.seal('hunter2 — ünïcode');
    assert.ok(one.startsWith(`svc1:${keyId(a)}:`));
    assert.ok(!one.includes('hunter2'));
    assert.notEqual(c.seal('hunter2 — ünïcode'), one);
    assert.equal(c.open(one), 'hunter2 — ünïcode');
    assert.equal(c.isCurrent(one), true);
    assert.equal(c.reveal('plain from before'), 'plain from before');
  });

  it('opens values of older keys of the ring and seals under the first; unknown keys and tampering fail', () => {
    const old = createCipher([a]).seal('v');
    const ring = createCipher([b, a]);
    assert.equal(ring.open(old), 'v');
    assert.equal(ring.isCurrent(old), false);
    assert.equal(ring.isCurrent(ring.seal('v')), true);
    assert.throws(() => createCipher([b]).open(old), SealError);
    const parts = old.split(':');
    const body = Buffer.from(parts[4]!, 'base64url');
    body[0] = (body[0] ?? 0) ^ 1;
    parts[4] = body.toString('base64url');
    assert.throws(() => createCipher([a]).open(parts.join(':')), /does not open/);
    assert.throws(() => createCipher([a]).open('svc1:zz'), /not a sealed value/);
  });

  it('keys are 32 bytes of base64; messages never carry the value', () => {
    assert.ok(Buffer.isBuffer(parseKey(a.toString('base64'), 'K')));
    const bad = parseKey('c2hvcnQ=', 'SVC_SECRETS_KEY');
    assert.equal(typeof bad, 'string');
    assert.match(bad as string, /^SVC_SECRETS_KEY: must be 32 random bytes/);
    assert.ok(!(bad as string).includes('c2hvcnQ'));
  });
});

describe('the key ring: SVC_SECRETS_KEY or a 0600 key file', () => {
  const home = mkdtempSync(path.join(tmpdir(), 'svc-keys-'));
  after(() => rmSync(home, { recursive: true, force: true }));

  it('creates the key file 0600 once and reads the same key on the next start', () => {
    const first = loadKeyRing({ home });
    assert.equal(statSync(keyFilePath(home)).mode & 0o777, 0o600);
    assert.deepEqual(loadKeyRing({ home }), first);
  });

  it('rotation puts a fresh key first and keeps the earlier ones for reading', () => {
    const [before] = readKeyFile(keyFilePath(home), false);
    assert.deepEqual(rotateKeyFile(keyFilePath(home)), { keys: 2 });
    const ring = loadKeyRing({ home });
    assert.equal(ring.length, 2);
    assert.deepEqual(ring[1], before);
    assert.equal(statSync(keyFilePath(home)).mode & 0o777, 0o600);
  });

  it('SVC_SECRETS_KEY wins over the file; old keys follow it; a readable file is refused', () => {
    const k = newKey();
    const o = newKey();
    const ring = loadKeyRing({ home, key: k.toString('base64'), oldKeys: [o.toString('base64')] });
    assert.deepEqual(ring, [k, o]);
    assert.throws(() => loadKeyRing({ home, key: 'nope' }), /SVC_SECRETS_KEY: must be 32/);
    const open = path.join(home, 'open');
    writeFileSync(path.join(open), `${k.toString('base64')}\n`, { mode: 0o644 });
    assert.throws(() => readKeyFile(open, false), /must not be readable by others/);
  });
});
