import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Secret tokens in the style of GitHub's: a typed prefix, 30 random base62 characters and a
 * 6-character base62 CRC32 checksum of prefix+random. A secret scanner recognises the prefix; a
 * mistyped token fails the checksum and is refused without touching the database.
 */
export const TOKEN_PREFIX = {
  user: 'svc_tok_',
  daemon: 'svc_dt_',
  invite: 'svc_inv_',
  local: 'svc_lt_',
} as const;
export type TokenKind = keyof typeof TOKEN_PREFIX;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LEN = 30;
const CHECK_LEN = 6;

function base62(n: number, width: number): string {
  let out = '';
  let v = n;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out;
}

function randomBase62(len: number): string {
  // 256 % 62 bias is avoided by rejection sampling.
  let out = '';
  while (out.length < len) {
    for (const byte of randomBytes(len * 2)) {
      if (byte < 248 && out.length < len) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

function checksum(body: string): string {
  return base62(crc32(body) >>> 0, CHECK_LEN);
}

export function mintToken(kind: TokenKind): string {
  const body = TOKEN_PREFIX[kind] + randomBase62(RANDOM_LEN);
  return body + checksum(body);
}

/** The kind of a well-formed token with a valid checksum, or null. */
export function tokenKind(token: string): TokenKind | null {
  for (const [kind, prefix] of Object.entries(TOKEN_PREFIX) as [TokenKind, string][]) {
    if (!token.startsWith(prefix)) continue;
    if (token.length !== prefix.length + RANDOM_LEN + CHECK_LEN) return null;
    const body = token.slice(0, -CHECK_LEN);
    if (!/^[0-9A-Za-z]+$/.test(token.slice(prefix.length))) return null;
    return checksum(body) === token.slice(-CHECK_LEN) ? kind : null;
  }
  return null;
}

export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A short, non-secret hint shown in token lists: the prefix and the last four characters. */
export function tokenHint(token: string): string {
  const prefix = Object.values(TOKEN_PREFIX).find((p) => token.startsWith(p)) ?? '';
  return `${prefix}…${token.slice(-4)}`;
}

/**
 * The form of an operator-chosen `SVC_ADMIN_TOKEN`: `svc_tok_` and at least 16 characters of
 * `[A-Za-z0-9_-]`. It carries no checksum (a person chose it), so the hub recognises it by its hash.
 */
const ADMIN_TOKEN_FORM = /^svc_tok_[A-Za-z0-9_-]{16,}$/;

/** The admin token with surrounding whitespace (a secret file's newline) removed, or null when malformed. */
export function parseAdminToken(value: string): string | null {
  const token = value.trim();
  return ADMIN_TOKEN_FORM.test(token) ? token : null;
}

export const ADMIN_TOKEN_RULE =
  'must be svc_tok_ followed by at least 16 characters of A-Z, a-z, 0-9, _ or -';
