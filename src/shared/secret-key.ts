import { randomBytes } from 'node:crypto';

/** The length of a key of the hub's cipher (AES-256). */
export const KEY_BYTES = 32;

export const KEY_RULE = `must be ${KEY_BYTES} random bytes in base64 (e.g. \`openssl rand -base64 32\`)`;

/** A 32-byte key from its base64 text, or an error message naming `what` (never the value). */
export function parseKey(text: string, what: string): Buffer | string {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== KEY_BYTES || !/^[A-Za-z0-9+/_-]+=*$/.test(trimmed)) return `${what}: ${KEY_RULE}`;
  return key;
}

export function newKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/** A secret's name (CONTRACT.md §12): an environment variable name, upper case, at most 64. */
export const SECRET_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;
export const SECRET_NAME_RULE =
  'upper-case letters, digits and underscores, not starting with a digit, at most 64';
