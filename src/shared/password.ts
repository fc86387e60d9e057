import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

// scrypt is memory-hard: N=2^15, r=8 uses 32 MiB per hash.
const PARAMS: ScryptOptions = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEYLEN = 32;

function derive(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEYLEN, PARAMS, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt);
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  // Unknown users still pay for one derivation so timing does not reveal which e-mails exist.
  const parts = stored?.split('$') ?? [];
  const salt = parts[4] ? Buffer.from(parts[4], 'base64') : randomBytes(16);
  const key = await derive(password, salt);
  if (parts[0] !== 'scrypt' || !parts[5]) return false;
  const expected = Buffer.from(parts[5], 'base64');
  return expected.length === key.length && timingSafeEqual(expected, key);
}
