import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Where artifact bytes live, content-addressed by their SHA-256 (hex). One small interface, so that
 * an object store can take the place of the folder later; the hub reads and writes only through it.
 */
export interface ArtifactStore {
  /** Stores the bytes of `source` under `sha256` (the caller has checked the digest). */
  put(sha256: string, source: Readable): Promise<void>;
  /** The bytes under `sha256`, or bytes `start`..`end` (inclusive) of them. */
  get(sha256: string, range?: { start: number; end: number }): Readable;
  /** The size of what is stored under `sha256`, or null when nothing is. */
  stat(sha256: string): Promise<{ size: number } | null>;
  /** Removes what is stored under `sha256` (nothing when absent). */
  remove(sha256: string): Promise<void>;
}

const SHA256 = /^[0-9a-f]{64}$/;

function check(sha256: string): string {
  if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
  return sha256;
}

/**
 * The store in a folder (`SVC_HOME/artifacts`, or `SVC_HUB_ARTIFACTS`): `<root>/<ab>/<sha256>`.
 * A file is written under a temporary name and renamed into place, so a reader never sees half of
 * one, and several hub processes can share the folder (a shared volume).
 */
export function folderStore(root: string): ArtifactStore {
  const fileOf = (sha256: string) => path.join(root, check(sha256).slice(0, 2), sha256);
  return {
    async put(sha256, source) {
      const file = fileOf(sha256);
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${randomUUID()}.tmp`;
      try {
        await pipeline(source, createWriteStream(tmp, { mode: 0o600 }));
        await rename(tmp, file);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    },
    get(sha256, range) {
      return createReadStream(fileOf(sha256), range ? { start: range.start, end: range.end } : {});
    },
    async stat(sha256) {
      try {
        const s = await stat(fileOf(sha256));
        return { size: s.size };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
    async remove(sha256) {
      await rm(fileOf(sha256), { force: true });
    },
  };
}
