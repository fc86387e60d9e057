import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from '../../shared/logger.js';
import type { CancelRunBody, ChildEndedBody, ExecuteRunBody } from '../../shared/protocol.js';
import { ArtifactUploader } from '../artifacts/uploader.js';
import type { DaemonDB } from '../db/schema.js';
import type { HubApi } from '../hub-api.js';
import { HugInbox } from '../hug/inbox.js';
import { SpareFolders } from '../spare-folders.js';
import { ActiveRun } from './active-run.js';
import { removeActiveRun, saveActiveRun } from './active-runs.repo.js';
import { ChildRuns } from './children.js';
import type { RunnerContext } from './context.js';
import { Closing, RunHubCaller } from './hub-caller.js';
import { startRunTimers } from './lease.js';
import { recoverRuns } from './recover.js';
import type { ReviewWait } from './review-wait.js';
import { driveRun } from './run-loop.js';
import { Spawner } from './spawner.js';

/**
 * The daemon's run executor. `runs/execute` starts a run here and answers at once; the run's phases
 * then go in order (run-loop.ts): an agent phase is a child process, a team phase one child run per
 * element through the hub. This class keeps the registry of the runs executing here and answers the
 * hub's commands about them.
 */

export interface RunnerOptions {
  db: Kysely<DaemonDB>;
  hub: HubApi;
  log: Logger;
  now: () => number;
  /** The daemon's home: per-run directories and output files live under `<home>/runs/`. */
  home: string;
  /** SIGTERM → SIGKILL grace when a run is cancelled (default 5 s). */
  killGraceMs?: number;
  /** Log lines are uploaded this often (default 200 ms). */
  logFlushMs?: number;
  /** A `foreach` phase runs at most this many children at once unless it sets max_parallel. */
  maxParallelChildren?: number;
}

export class Runner {
  /** The daemon's local URL, given to agents as SVC_DAEMON_URL. */
  daemonUrl = '';
  /** `hug/deliver` notifies it; a run waiting for a verdict on a `review: true` phase listens. */
  readonly hugInbox = new HugInbox();
  /** Artifacts of ended phases on their way to the hub. */
  readonly artifacts: ArtifactUploader;
  private readonly runs = new Map<string, ActiveRun>();
  /** Starts agents from a small helper process (spawner.ts). */
  private readonly spawner = new Spawner();
  private readonly runFolders: SpareFolders;
  private readonly ctx: RunnerContext;
  private closing = false;
  private recovering: Promise<number> | null = null;

  constructor(private readonly opts: RunnerOptions) {
    const closing = () => this.closing;
    const caller = new RunHubCaller({ hub: opts.hub, closing });
    this.artifacts = new ArtifactUploader({
      db: opts.db,
      hub: opts.hub,
      log: opts.log,
      now: opts.now,
      home: opts.home,
    });
    this.runFolders = new SpareFolders(path.join(opts.home, 'spare', 'runs'), 0o777);
    this.ctx = {
      db: opts.db,
      caller,
      log: opts.log,
      now: opts.now,
      home: opts.home,
      runFolders: this.runFolders,
      spawn: this.spawner.spawn,
      killGraceMs: opts.killGraceMs ?? 5_000,
      inbox: this.hugInbox,
      artifacts: this.artifacts,
      children: new ChildRuns({ caller, maxParallel: opts.maxParallelChildren ?? 8 }),
      closing,
      daemonUrl: () => this.daemonUrl,
    };
  }

  /** Ids of the runs executing now. */
  active(): string[] {
    return [...this.runs.keys()];
  }

  /** The artifact folder of the agent phase of `runId` running now, or null. */
  artifactsDirOf(runId: string): string | null {
    return this.runs.get(runId)?.artifactsDir ?? null;
  }

  /** The lease epoch of a run executing here, or null. */
  epochOf(runId: string): number | null {
    return this.runs.get(runId)?.epoch ?? null;
  }

  /** Resolves once the hub has taken the reports of a run active here (its `started` among them). */
  async reported(runId: string): Promise<void> {
    const run = this.runs.get(runId);
    if (run) await this.ctx.caller.reported(run).catch(() => {});
  }

  /** Resolves when the run (if active here) has finished its work. */
  async settled(runId: string): Promise<void> {
    await this.runs.get(runId)?.done;
  }

  /** Starts a run in the background. A repeated execute of the same epoch changes nothing. */
  async execute(body: ExecuteRunBody): Promise<{ accepted: boolean; already_running: boolean }> {
    if (this.closing) throw new Closing('the daemon is stopping');
    const existing = this.runs.get(body.run_id);
    if (existing && existing.epoch >= body.lease_epoch) return { accepted: true, already_running: true };
    if (existing) existing.fence();
    await saveActiveRun(this.opts.db, body, this.opts.now());
    this.launch(body, null);
    return { accepted: true, already_running: false };
  }

  /** `runs/cancel`: stops the run's processes and reports `cancelled` (also for a run not running here). */
  async cancel(body: CancelRunBody): Promise<{ acknowledged: true; active: boolean }> {
    const run = this.runs.get(body.run_id);
    if (run) {
      run.cancel(body.reason ?? null);
      return { acknowledged: true, active: true };
    }
    // Not running here (never started, or ended meanwhile): tell the hub; a stale epoch is refused there.
    const reason = body.reason ? { error: body.reason } : {};
    await this.ctx.caller
      .reportOnce(body.run_id, body.lease_epoch, 'cancelled', reason)
      .catch((err) => this.opts.log.warn({ err, run_id: body.run_id }, 'cancel report failed'));
    return { acknowledged: true, active: false };
  }

  /** `runs/child_ended`: a child run of one of our runs ended. */
  childEnded(body: ChildEndedBody): { received: true } {
    this.ctx.children.ended(body.child_run_id, {
      state: body.state,
      outputs: body.outputs,
      error: body.error ?? null,
    });
    return { received: true };
  }

  /**
   * Reports the runs a previous process of this daemon left (see recover.ts), or waits again for the
   * review one of them waited for. Calls made while one is in progress share it.
   */
  recover(): Promise<number> {
    this.recovering ??= recoverRuns({
      ...this.ctx,
      isRunning: (runId) => this.runs.has(runId),
      launch: (body, resume) => this.launch(body, resume),
    }).finally(() => {
      this.recovering = null;
    });
    return this.recovering;
  }

  /** Kills every agent at once and stops reporting; rows stay so the next start reports them. */
  async close(): Promise<void> {
    this.closing = true;
    const runs = [...this.runs.values()];
    for (const r of runs) r.halt();
    await Promise.all(runs.map((r) => r.done.catch(() => {})));
    await this.spawner.close();
    await Promise.all([this.artifacts.close(), this.runFolders.close()]);
  }

  /** Starts driving a run here: lease renewal, log uploads, and its phases (or its review wait). */
  private launch(body: ExecuteRunBody, resume: ReviewWait | null): void {
    const { caller, log, now, killGraceMs } = this.ctx;
    const run = new ActiveRun(body.run_id, body.lease_epoch, body.lease_ms, killGraceMs, {
      caller,
      log,
      now,
    });
    this.runs.set(run.id, run);
    run.redactor.add(Object.values(body.secrets ?? {}));
    startRunTimers(run, { caller, log, logFlushMs: this.opts.logFlushMs ?? 200 });
    run.done = driveRun(this.ctx, run, body, resume).finally(() => this.finish(run));
  }

  private async finish(run: ActiveRun): Promise<void> {
    run.clearTimers();
    if (this.runs.get(run.id) === run) this.runs.delete(run.id);
    if (this.closing) return;
    await removeActiveRun(this.opts.db, run.id, run.epoch);
  }
}
