import type { Logger } from '../../shared/logger.js';
import { merged } from '../../shared/merged.js';
import type { AgentRun } from './agent.js';
import type { LeasedRun, RunHubCaller } from './hub-caller.js';
import { LogBuffer } from './logs.js';
import { Redactor } from './redact.js';

/**
 * A run executing on this daemon under one lease epoch: its agent processes, its log buffer, its
 * timers, and the flags the phase loop checks between steps (cancelled, fenced). `abort` ends every
 * wait of the run (a review verdict, a child run).
 */
export class ActiveRun implements LeasedRun {
  cancelled = false;
  cancelReason: string | null = null;
  fenced = false;
  readonly agents = new Set<AgentRun>();
  readonly abort = new AbortController();
  readonly logs: LogBuffer;
  /** The run's secret values (memory only), masked in its log lines. */
  readonly redactor = new Redactor();
  readonly timers: NodeJS.Timeout[] = [];
  /** Resolves when the run's work here has ended. */
  done: Promise<void> = Promise.resolve();
  /** The artifact folder of the agent phase running now (`SVC_ARTIFACTS_DIR`), or null. */
  artifactsDir: string | null = null;
  private readonly now: () => number;

  constructor(
    readonly id: string,
    readonly epoch: number,
    readonly leaseMs: number,
    private readonly killGraceMs: number,
    deps: { caller: RunHubCaller; log: Logger; now: () => number },
  ) {
    this.logs = new LogBuffer(this, merged(deps, { redactor: this.redactor }));
    this.now = deps.now;
  }

  /** Cancelled or fenced: the loop starts nothing more. */
  get stopped(): boolean {
    return this.cancelled || this.fenced;
  }

  /** A line of the runner's own about a phase (`system` stream). */
  systemLine(phase: string, text: string): void {
    this.logs.push({ stream: 'system', text, phase, at: this.now() });
  }

  /** `runs/cancel`: agents get SIGTERM, then SIGKILL after the grace; waits end. */
  cancel(reason: string | null): void {
    this.cancelled = true;
    this.cancelReason = reason;
    this.stop(false);
  }

  /** The run is no longer ours: agents are killed at once, waits end, nothing more is reported. */
  fence(): void {
    this.stop(true);
  }

  /** The daemon is stopping: timers end, agents are killed at once, nothing is reported. */
  halt(): void {
    this.clearTimers();
    this.abort.abort();
    for (const a of this.agents) a.stop(0);
  }

  clearTimers(): void {
    for (const t of this.timers) clearInterval(t);
  }

  private stop(fenced: boolean): void {
    if (fenced) this.fenced = true;
    this.abort.abort();
    for (const a of this.agents) a.stop(fenced ? 0 : this.killGraceMs);
  }
}
