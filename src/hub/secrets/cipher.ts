import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { KEY_BYTES } from '../../shared/secret-key.js';
import type { Cipher } from '../ports.js';

/**
 * Encryption at rest of the hub's secrets (realm and organization secrets, the dispatch signing
 * key, notification channel secrets): AES-256-GCM with a fresh 96-bit nonce per value. A sealed
 * value is text, `svc1:<key id>:<nonce>:<tag>:<ciphertext>` (base64url parts), so it fits the
 * text columns that held the plain values. The key id names the key that sealed it, so that
 * several keys can be read at once while a rotation re-encrypts (src/hub/secrets/reseal.ts).
 */

const PREFIX = 'svc1:';

/** The id of a key: the first 8 bytes of its SHA-256, hex. Not secret; it only tells keys apart. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** A sealed value that cannot be opened (unknown key, damaged text). Never carries the value. */
export class SealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealError';
  }
}

/**
 * A cipher over a key ring: `keys[0]` seals, every key opens what it sealed (older keys stay
 * readable until everything has been sealed again under the current one).
 */
export function createCipher(keys: readonly Buffer[]): Cipher {
  if (keys.length === 0) throw new Error('a cipher needs at least one key');
  const ring = new Map<string, Buffer>();
  for (const k of keys) {
    if (k.length !== KEY_BYTES) throw new Error(`a key has ${k.length} bytes, not ${KEY_BYTES}`);
    if (!ring.has(keyId(k))) ring.set(keyId(k), k);
  }
  const current = keys[0]!;
  const currentId = keyId(current);
  const cipher: Cipher = {
    keyId: currentId,
    seal(plain) {
      const nonce = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', current, nonce);
      const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      const parts = [nonce, c.getAuthTag(), body].map((b) => b.toString('base64url'));
      return `${PREFIX}${currentId}:${parts.join(':')}`;
    },
    open(sealed) {
      const parts = sealed.split(':');
      if (parts.length !== 5 || `${parts[0]}:` !== PREFIX) throw new SealError('not a sealed value');
      const key = ring.get(parts[1]!);
      if (!key) throw new SealError(`sealed under key ${parts[1]}, which this hub does not have`);
      const [nonce, tag, body] = parts.slice(2).map((p) => Buffer.from(p, 'base64url'));
      try {
        const d = createDecipheriv('aes-256-gcm', key, nonce!);
        d.setAuthTag(tag!);
        return Buffer.concat([d.update(body!), d.final()]).toString('utf8');
      } catch {
        throw new SealError(`a value sealed under key ${parts[1]} does not open (damaged)`);
      }
    },
    reveal(value) {
      return cipher.isSealed(value) ? cipher.open(value) : value;
    },
    isSealed: (value) => value.startsWith(PREFIX),
    isCurrent: (value) => value.startsWith(`${PREFIX}${currentId}:`),
    currentPrefix: () => `${PREFIX}${currentId}:`,
  };
  return cipher;
}
