import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, mkdirSync, rmSync } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely, Selectable } from 'kysely';
import type { Logger } from '../../shared/logger.js';
import type { ArtifactUploadsTable, DaemonDB } from '../db/schema.js';
import { type HubApi, HubRefusedError } from '../hub-api.js';
import { phaseFileName } from '../runner/plan.js';
import { SpareFolders } from '../spare-folders.js';

/**
 * Artifacts on their way to the hub (CONTRACT.md §13). When a phase ends, `collect` moves each file
 * of its artifact folder into the spool (`<home>/artifacts/spool/`) and records it in the daemon's
 * database; one worker sends them, oldest first: it asks the hub how many bytes it has and streams
 * the rest, so an upload cut by a restart of either side continues where it stopped. A file leaves
 * the spool once the hub has it whole (or refuses it for good).
 */

/** Names the upload route uses for files it is still writing; never collected. */
export const PARTIAL_PREFIX = '.upload-';

export interface UploaderOptions {
  db: Kysely<DaemonDB>;
  hub: HubApi;
  log: Logger;
  now: () => number;
  home: string;
  /** First wait after a failed attempt; doubles up to 10 s (default 250 ms). */
  retryMs?: number;
}

export async function sha256Of(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(file)) h.update(c as Buffer);
  return h.digest('hex');
}

/** The files under `dir` (recursively) as paths relative to it, with `/` between parts. */
async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: string[] = [];
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.name.startsWith(PARTIAL_PREFIX)) continue;
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await filesUnder(path.join(dir, e.name), rel)));
    else if (e.isFile()) out.push(rel);
  }
  return out;
}

/**
 * Removes `dir` if it is empty or gone (true); false when something is in it. In the thread pool:
 * under the runs bench's load an `rmdir` of a phase's folder took the daemon 1 ms on average and up to
 * 14 ms (ext4), during which its event loop, and so every other run's traffic, would have waited.
 */
async function removedEmpty(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** Removes a folder the agent left: one system call when it is empty, as it usually is by now. */
async function removeFolder(dir: string): Promise<void> {
  try {
    await rmdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    // Empty folders or a partial upload left inside.
    await rm(dir, { recursive: true, force: true });
  }
}

export class ArtifactUploader {
  private readonly spool: string;
  /** The phases' artifact folders, while their agents run. */
  private readonly phases: string;
  private running: Promise<void> | null = null;
  private closed = false;
  private wake: (() => void) | null = null;
  private readonly waiters = new Set<() => void>();

  /** Phase folders made ahead (private, as the phases' are). */
  private readonly spares: SpareFolders;

  constructor(private readonly opts: UploaderOptions) {
    this.spool = path.join(opts.home, 'artifacts', 'spool');
    this.phases = path.join(opts.home, 'artifacts', 'phases');
    this.spares = new SpareFolders(path.join(opts.home, 'spare', 'artifacts'), 0o700);
  }

  /**
   * A fresh, private artifact folder for one phase of a run (`SVC_ARTIFACTS_DIR`). Synchronous: a
   * system call on the way to the agent's start, which should not wait twice for the thread pool
   * behind whatever else the daemon is doing.
   */
  phaseFolder(runId: string, phase: string): string {
    const dir = path.join(this.phases, phaseFileName(runId, phase));
    if (this.spares.take(dir)) return dir;
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
      } else if (code === 'EEXIST') {
        // One left by an earlier attempt of the phase is emptied first.
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { mode: 0o700 });
      } else {
        throw err;
      }
    }
    return dir;
  }

  /**
   * Moves the files of a phase's folder into the spool, records them, and starts sending. Most
   * phases leave their folder empty: it is removed first, and listed only when that fails.
   */
  async collect(runId: string, phase: string, dir: string): Promise<number> {
    if (await removedEmpty(dir)) return 0;
    const names = await filesUnder(dir);
    if (names.length > 0) await mkdir(this.spool, { recursive: true, mode: 0o700 });
    for (const name of names) {
      const from = path.join(dir, ...name.split('/'));
      const file = path.join(this.spool, randomUUID());
      await rename(from, file);
      const [size, sha256] = [(await stat(file)).size, await sha256Of(file)];
      await this.opts.db
        .insertInto('artifact_uploads')
        .values({ run_id: runId, phase, name, file, size, sha256, created_at: this.opts.now() })
        .execute();
    }
    await removeFolder(dir);
    if (names.length > 0) this.start();
    return names.length;
  }

  /** Starts the worker (also at daemon start: uploads a previous process left continue). */
  start(): void {
    if (this.closed) return;
    this.wake?.();
    this.running ??= this.work().finally(() => {
      this.running = null;
    });
  }

  /** Resolves when no upload of the run is waiting any more, or `stop()` holds, or the uploader closes. */
  async flush(runId: string, stop: () => boolean = () => false): Promise<void> {
    for (;;) {
      if (this.closed || stop()) return;
      const left = await this.opts.db
        .selectFrom('artifact_uploads')
        .select('id')
        .where('run_id', '=', runId)
        .executeTakeFirst();
      if (!left) return;
      await new Promise<void>((resolve) => {
        this.waiters.add(resolve);
        this.start();
      });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    this.notify();
    await Promise.all([this.running, this.spares.close()]);
  }

  private notify(): void {
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  private async work(): Promise<void> {
    let wait = this.opts.retryMs ?? 250;
    while (!this.closed) {
      const row = await this.opts.db
        .selectFrom('artifact_uploads')
        .selectAll()
        .orderBy('id')
        .executeTakeFirst();
      if (!row) return this.notify();
      try {
        await this.send(row);
        await this.done(row.id, row.file);
        wait = this.opts.retryMs ?? 250;
      } catch (err) {
        if (this.closed) return;
        if (err instanceof HubRefusedError && err.status >= 400 && err.status < 500 && err.status !== 409) {
          // The hub will not take it (the run is gone, another daemon holds it, too large): drop it.
          this.opts.log.warn({ err, run_id: row.run_id, name: row.name }, 'the hub refused an artifact');
          await this.done(row.id, row.file);
          continue;
        }
        this.opts.log.debug({ err, run_id: row.run_id, name: row.name }, 'artifact upload interrupted');
        this.notify(); // a flush whose run stopped meanwhile stops waiting
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, wait);
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wake = null;
        wait = Math.min(wait * 2, 10_000);
      }
    }
  }

  private async done(id: number, file: string): Promise<void> {
    await this.opts.db.deleteFrom('artifact_uploads').where('id', '=', id).execute();
    await rm(file, { force: true });
    this.notify();
  }

  /** Sends one file: asks where the hub stands, then streams the rest until the hub has it whole. */
  private async send(row: Selectable<ArtifactUploadsTable>) {
    const query = {
      run_id: row.run_id,
      phase: row.phase,
      name: row.name,
      sha256: row.sha256,
      size: row.size,
    };
    let at = await this.opts.hub.artifactUpload(query);
    for (let attempt = 0; !at.artifact; attempt++) {
      if (this.closed || attempt > 5) throw new Error('the upload did not complete');
      const offset = at.offset;
      try {
        at = await this.opts.hub.artifactUpload(query, { offset, file: row.file });
      } catch (err) {
        if (!(err instanceof HubRefusedError && err.status === 409)) throw err;
        at = await this.opts.hub.artifactUpload(query);
      }
    }
  }
}
