import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ArtifactsTable } from '../../db/schema.js';
import type { Artifact, ArtifactUpload } from '../../shared/api/artifacts.js';
import { AppError, conflict, notFound } from '../../shared/errors.js';
import type { Actor, DaemonActor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { visibleRun } from '../runs/read.service.js';
import { loadRun } from '../runs/runs.repo.js';
import { artifactsOfRun, findUploaded, insertArtifact, loadArtifact } from './artifacts.repo.js';
import { contentTypeOf } from './content-type.js';
import type { ArtifactStore } from './store.js';

/** Artifacts (CONTRACT.md §13): daemon uploads (resumable), the list of a run, reading one. */

export const DEFAULT_ARTIFACT_MAX_BYTES = 1024 ** 3;

export interface Artifacts {
  store: ArtifactStore;
  /** Partial uploads: `<folder>/<key>`, the bytes received so far. */
  uploads: string;
  maxBytes: number;
  /** Uploads under way in this process, by key: a second one for the same key waits its turn. */
  busy: Set<string>;
}

export function artifactsOf(
  root: string,
  store: ArtifactStore,
  maxBytes = DEFAULT_ARTIFACT_MAX_BYTES,
): Artifacts {
  return { store, uploads: path.join(root, 'uploads'), maxBytes, busy: new Set() };
}

export const artifactOut = (r: ArtifactsTable): Artifact => ({
  id: r.id,
  run_id: r.run_id,
  phase: r.phase,
  name: r.name,
  size: Number(r.size),
  sha256: r.sha256,
  content_type: r.content_type,
  created_at: Number(r.created_at),
});

/** `artifacts/list`: the artifacts of a run the caller may see, oldest first. */
export async function listArtifacts(hub: Hub, actor: Actor | null, runId: string): Promise<Artifact[]> {
  await visibleRun(hub, actor, runId, 'runs.view');
  return (await artifactsOfRun(hub.db, runId)).map(artifactOut);
}

/** One artifact, for a caller who may see its run; `not_found` otherwise (as for the run). */
export async function readableArtifact(hub: Hub, actor: Actor | null, id: string): Promise<ArtifactsTable> {
  const row = await loadArtifact(hub.db, id);
  if (!row) {
    if (!actor) throw new AppError('unauthorized', 'authentication required');
    throw notFound('artifact');
  }
  try {
    await visibleRun(hub, actor, row.run_id, 'runs.view');
  } catch (err) {
    // Whoever may not see the run does not learn that the artifact exists.
    if (err instanceof AppError && (err.code === 'forbidden' || err.code === 'not_found'))
      throw notFound('artifact');
    throw err;
  }
  return row;
}

export interface UploadKey {
  run_id: string;
  phase: string;
  name: string;
  sha256: string;
  size: number;
}

const partialOf = (a: Artifacts, k: UploadKey) =>
  path.join(
    a.uploads,
    createHash('sha256').update(`${k.run_id}\0${k.phase}\0${k.name}\0${k.sha256}\0${k.size}`).digest('hex'),
  );

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

/** The run of an upload: one this daemon holds (or held), of its realm. */
async function uploadRun(hub: Hub, a: Artifacts, daemon: DaemonActor, k: UploadKey) {
  const run = await loadRun(hub.db, k.run_id);
  if (!run || run.realm_id !== daemon.daemon.realm_id) throw notFound('run');
  if (run.daemon_id !== daemon.daemon.id) throw conflict('this daemon does not hold the run');
  if (k.size > a.maxBytes) {
    throw new AppError('bad_request', `the artifact is larger than the limit of ${a.maxBytes} bytes`, {
      max_bytes: a.maxBytes,
    });
  }
  return run;
}

/** Where an upload stands: the bytes the hub has (all of them, with the row, once it is whole). */
export async function uploadStatus(
  hub: Hub,
  a: Artifacts,
  daemon: DaemonActor,
  k: UploadKey,
): Promise<ArtifactUpload> {
  await uploadRun(hub, a, daemon, k);
  const done = await findUploaded(hub.db, k);
  if (done) return { offset: Number(done.size), artifact: artifactOut(done) };
  return { offset: await sizeOf(partialOf(a, k)), artifact: null };
}

/** Counts the bytes through it and refuses more than `limit`. */
function limited(limit: number, onCount: (n: number) => void): Transform {
  let n = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      n += chunk.length;
      onCount(n);
      if (n > limit) return done(new AppError('bad_request', 'the body is longer than the artifact'));
      done(null, chunk);
    },
  });
}

/**
 * Appends `body` to the partial upload at `offset` (which must be what the hub has: else `conflict`
 * with `details.offset`). Once all `size` bytes are in, their SHA-256 is checked, the file goes to
 * the store and the row is written. A body cut short keeps what arrived: the daemon resumes there.
 */
export async function receiveUpload(
  hub: Hub,
  a: Artifacts,
  daemon: DaemonActor,
  k: UploadKey,
  offset: number,
  body: Readable,
): Promise<ArtifactUpload> {
  const run = await uploadRun(hub, a, daemon, k);
  const key = partialOf(a, k);
  if (a.busy.has(key))
    throw conflict('an upload of this artifact is under way', { offset: await sizeOf(key) });
  a.busy.add(key);
  try {
    const done = await findUploaded(hub.db, k);
    if (done) {
      body.resume();
      return { offset: Number(done.size), artifact: artifactOut(done) };
    }
    const have = await sizeOf(key);
    if (offset !== have) {
      body.resume();
      throw conflict(`the hub has ${have} bytes of this artifact; continue from there`, { offset: have });
    }
    await mkdir(a.uploads, { recursive: true, mode: 0o700 });
    // Hashed on the way in when the upload starts at 0; a resumed one is read again at the end.
    const hash = offset === 0 ? createHash('sha256') : null;
    const tee = new PassThrough();
    tee.on('data', (c: Buffer) => hash?.update(c));
    await pipeline(
      body,
      limited(k.size - offset, () => {}),
      tee,
      createWriteStream(key, { flags: 'a', mode: 0o600 }),
    );
    const total = await sizeOf(key);
    if (total < k.size) return { offset: total, artifact: null };
    const digest = hash ? hash.digest('hex') : await hashFile(key);
    if (digest !== k.sha256) {
      await rm(key, { force: true });
      throw new AppError(
        'bad_request',
        `the bytes received have sha256 ${digest}, not ${k.sha256}; upload again`,
        {
          sha256: digest,
        },
      );
    }
    if (!(await a.store.stat(k.sha256))) await a.store.put(k.sha256, createReadStream(key));
    const row = await insertArtifact(hub.db, {
      id: hub.newId(),
      run_id: run.run_id,
      realm_id: run.realm_id,
      phase: k.phase,
      name: k.name,
      size: k.size,
      sha256: k.sha256,
      content_type: contentTypeOf(k.name),
      created_at: hub.now(),
    });
    await rm(key, { force: true });
    return { offset: k.size, artifact: artifactOut(row) };
  } finally {
    a.busy.delete(key);
  }
}

async function hashFile(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(file)) h.update(c as Buffer);
  return h.digest('hex');
}
