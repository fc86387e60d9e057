import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A channel's signing secret: shown once at creation (and on rotate_secret). */
export const newChannelSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

/** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`, the value of X-Svc-Signature. */
export function signBody(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * What a receiver does (exported for tests and documentation): recompute the signature, compare in
 * constant time, and refuse timestamps older than `toleranceMs` (replays).
 */
export function verifySignature(
  secret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  body: string,
  opts: { now?: number; toleranceMs?: number } = {},
): boolean {
  const ts = Number(headers.timestamp);
  if (!Number.isInteger(ts) || !headers.signature) return false;
  if (Math.abs((opts.now ?? Date.now()) - ts) > (opts.toleranceMs ?? 5 * 60_000)) return false;
  const want = Buffer.from(signBody(secret, ts, body));
  const got = Buffer.from(headers.signature);
  return want.length === got.length && timingSafeEqual(want, got);
}
