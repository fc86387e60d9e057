import type { Logger } from '../../shared/logger.js';
import { LOG_EXCERPT_LINES, LOG_EXCERPT_MAX, type RunLogLine } from '../../shared/protocol.js';
import { HubUnreachableError } from '../hub-api.js';
import { Fenced, type LeasedRun, type RunHubCaller } from './hub-caller.js';
import type { Redactor } from './redact.js';

export interface LogBufferOptions {
  caller: RunHubCaller;
  log: Logger;
  /** Lines per `runs/append_logs` (default 1000). */
  batch?: number;
  /** A batch the hub could not take goes back to the front while fewer lines than this wait (default 10 000). */
  cap?: number;
  /** Masks the run's secret values in every line pushed. */
  redactor?: Redactor;
}

/**
 * A run's log lines (agent output and the runner's own `system` lines), uploaded in batches with the
 * run's lease. Uploads are chained, so batches arrive in order; a batch the hub could not be reached
 * for is put back in front; a fenced run or a stopping daemon uploads nothing more.
 */
export class LogBuffer {
  private readonly lines: RunLogLine[] = [];
  /** The last lines of each phase (masked), for its review. */
  private readonly tails = new Map<string, string[]>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly batch: number;
  private readonly cap: number;

  constructor(
    private readonly run: LeasedRun,
    private readonly opts: LogBufferOptions,
  ) {
    this.batch = opts.batch ?? 1000;
    this.cap = opts.cap ?? 10_000;
  }

  /** A line of the run's; every secret value of the run in it is masked first (redact.ts). */
  push(line: RunLogLine): void {
    const r = this.opts.redactor;
    const masked = r?.active ? { ...line, text: r.redact(line.text) } : line;
    this.lines.push(masked);
    if (!masked.phase) return;
    const tail = this.tails.get(masked.phase) ?? [];
    this.tails.set(masked.phase, tail);
    tail.push(masked.text);
    if (tail.length > LOG_EXCERPT_LINES) tail.shift();
  }

  /** A phase starts (again): its excerpt begins afresh. */
  startPhase(phase: string): void {
    this.tails.delete(phase);
  }

  /** The phase's last lines (at most LOG_EXCERPT_LINES, LOG_EXCERPT_MAX characters), or null. */
  excerpt(phase: string): string | null {
    const tail = this.tails.get(phase);
    if (!tail?.length) return null;
    const text = tail.join('\n');
    return text.length > LOG_EXCERPT_MAX ? `…${text.slice(text.length - LOG_EXCERPT_MAX + 1)}` : text;
  }

  /** Lines waiting for upload. */
  get pending(): number {
    return this.lines.length;
  }

  /** Uploads the oldest batch, after every upload already under way. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.upload());
    return this.flushing;
  }

  private async upload(): Promise<void> {
    const { run, opts } = this;
    if (this.lines.length === 0 || run.fenced || opts.caller.closing()) return;
    const lines = this.lines.splice(0, this.batch);
    try {
      await opts.caller.call(run, 'runs/append_logs', { run_id: run.id, lease_epoch: run.epoch, lines }, 1);
    } catch (err) {
      if (err instanceof Fenced) return;
      if (err instanceof HubUnreachableError && this.lines.length < this.cap) this.lines.unshift(...lines);
      else opts.log.warn({ err, run_id: run.id }, 'log upload failed');
    }
  }
}
