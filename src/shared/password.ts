import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Passwords are stored as `scrypt$N$r$p$salt$key` (base64 salt and key). scrypt is memory-hard: at
 * the default cost, N = 2^15 with r = 8 uses 32 MiB and about 100 ms of a core per hash. A hub's
 * `passwordCost` (HubConfig, log2 of N) sets the cost of new hashes; the test suite lowers it, as
 * Devise's `stretches` or Django's test hashers do. A stored hash is checked with its own
 * parameters, so hashes made at another cost stay valid when it changes.
 */
export const DEFAULT_PASSWORD_COST = 15;
const R = 8;
const P = 1;
const KEYLEN = 32;
/**
 * Parameters a hash may name, as inclusive integer ranges (a hash written by hand cannot make a check
 * take gigabytes); `cost` is log2 of N.
 */
const BOUNDS = { cost: [10, 20], r: [1, 32], p: [1, 16] } as const;
const within = (x: number, [min, max]: readonly [number, number]) =>
  Number.isInteger(x) && x >= min && x <= max;

interface Params {
  n: number;
  r: number;
  p: number;
}

function derive(password: string, salt: Buffer, { n, r, p }: Params): Promise<Buffer> {
  // scrypt needs 128 · N · r bytes; Node refuses above `maxmem`.
  const maxmem = 256 * n * r;
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEYLEN, { N: n, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

const paramsOf = (cost: number): Params => ({ n: 2 ** cost, r: R, p: P });

export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_COST): Promise<string> {
  // A hash beyond the bounds that `verifyPassword` accepts could never be checked.
  if (!within(cost, BOUNDS.cost)) {
    throw new RangeError(`password cost ${cost} is not an integer from ${BOUNDS.cost.join(' to ')}`);
  }
  const salt = randomBytes(16);
  const params = paramsOf(cost);
  const key = await derive(password, salt, params);
  const { n, r, p } = params;
  return `scrypt$${n}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** The parameters, salt and key of a stored hash; null when it is not one this code writes. */
function parse(stored: string | null): (Params & { salt: Buffer; key: Buffer }) | null {
  const parts = stored?.split('$') ?? [];
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const fits = within(Math.log2(n), BOUNDS.cost) && within(r, BOUNDS.r) && within(p, BOUNDS.p);
  if (!fits || !parts[4] || !parts[5]) return null;
  return { n, r, p, salt: Buffer.from(parts[4], 'base64'), key: Buffer.from(parts[5], 'base64') };
}

/**
 * Whether `password` matches `stored`. Unknown users and unusable hashes still pay for one
 * derivation at the hub's cost, so timing does not reveal which e-mail addresses exist.
 */
export async function verifyPassword(
  password: string,
  stored: string | null,
  cost = DEFAULT_PASSWORD_COST,
): Promise<boolean> {
  const hash = parse(stored);
  if (!hash) {
    await derive(password, randomBytes(16), paramsOf(cost));
    return false;
  }
  const key = await derive(password, hash.salt, hash);
  return hash.key.length === key.length && timingSafeEqual(hash.key, key);
}
