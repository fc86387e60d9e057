import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../../shared/private-files.js';
import { newKey, parseKey } from '../../shared/secret-key.js';

/** The key file's name under SVC_HOME. */
export const KEY_FILE = 'secrets.key';

export interface KeySource {
  /** SVC_SECRETS_KEY (base64): when set, the key file is not used. */
  key?: string | undefined;
  /** SVC_SECRETS_OLD_KEYS: earlier keys still accepted for reading, while a rotation re-encrypts. */
  oldKeys?: readonly string[] | undefined;
  /** SVC_HOME: where the key file lives when no key is configured. */
  home: string;
}

/**
 * The hub's key ring, current key first. With `SVC_SECRETS_KEY` the ring is that key and the old
 * keys given. Otherwise it is the key file `SVC_HOME/secrets.key`: one base64 key per line, the
 * current one first, created with one fresh key (mode 0600) on the first start. Several processes
 * starting at once create it exclusively, so one key wins and every process reads it.
 */
export function loadKeyRing(src: KeySource): Buffer[] {
  const old = (src.oldKeys ?? []).map((k, i) => must(parseKey(k, `SVC_SECRETS_OLD_KEYS[${i}]`)));
  if (src.key !== undefined && src.key.trim() !== '')
    return [must(parseKey(src.key, 'SVC_SECRETS_KEY')), ...old];
  return [...readKeyFile(keyFilePath(src.home), true), ...old];
}

export const keyFilePath = (home: string) => path.join(path.resolve(home), KEY_FILE);

/** The keys of a key file, current first; `create`: a missing file is created with a fresh key. */
export function readKeyFile(file: string, create: boolean): Buffer[] {
  if (create) {
    ensurePrivateDir(path.dirname(file));
    try {
      writeFileSync(file, `${newKey().toString('base64')}\n`, { flag: 'wx', mode: PRIVATE_FILE_MODE });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  if ((statSync(file).mode & 0o077) !== 0) {
    throw new Error(`${file}: the secrets key file must not be readable by others (chmod 600 ${file})`);
  }
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (lines.length === 0) throw new Error(`${file}: the secrets key file holds no key`);
  return lines.map((l, i) => must(parseKey(l, `${file} line ${i + 1}`)));
}

/**
 * Rotation with a key file: a fresh key goes first, the earlier ones stay below it for reading.
 * The next hub start re-encrypts everything under the new key. Answers the new key's position.
 */
export function rotateKeyFile(file: string): { keys: number } {
  const keys = readKeyFile(file, false);
  const next = [newKey(), ...keys].map((k) => k.toString('base64'));
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${next.join('\n')}\n`, { mode: PRIVATE_FILE_MODE });
  // Rename is atomic: a hub starting meanwhile reads the old file or the new one, never half of one.
  renameSync(tmp, file);
  return { keys: next.length };
}

function must(k: Buffer | string): Buffer {
  if (typeof k === 'string') throw new Error(k);
  return k;
}
