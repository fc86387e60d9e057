import { REPORT_NEXT_MAX, type RunReportEvent } from '../../shared/protocol.js';
import { type BackoffOptions, backoffDelay } from '../backoff.js';
import { type HubApi, HubRefusedError, HubUnreachableError } from '../hub-api.js';

/** This daemon lost the run (a newer lease epoch exists): stop silently. */
export class Fenced extends Error {
  override name = 'Fenced';
}

/** The daemon is stopping: a run reports nothing more. */
export class Closing extends Error {
  override name = 'Closing';
}

/** What the caller needs of a run: its lease, whether it was fenced, and how to fence it. */
export interface LeasedRun {
  readonly id: string;
  readonly epoch: number;
  readonly fenced: boolean;
  /** Stops the run at once (its agents killed) and reports nothing more. */
  fence(): void;
}

export interface RunHubCallerOptions {
  hub: HubApi;
  /** Whether the daemon is stopping. */
  closing(): boolean;
  /** Attempts of a call while the hub is unreachable (default 20). */
  attempts?: number;
  /** Delay ceilings between attempts (default 200 ms doubling, at most 5 s), full jitter. */
  backoff?: BackoffOptions;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export const RUN_CALL_BACKOFF: BackoffOptions = { baseMs: 200, capMs: 5_000 };

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The hub calls a run makes under its lease (`runs/report`, `reviews/request`, `runs/start_child`,
 * `runs/renew_lease`, `runs/append_logs`). A `conflict` (409) means the run is no longer ours: the run
 * is fenced and the call throws Fenced. An unreachable hub is tried again with backoff, up to
 * `attempts` in all; any other refusal is thrown at once.
 */
export class RunHubCaller {
  readonly hub: HubApi;
  private readonly attempts: number;
  private readonly backoff: BackoffOptions;
  /** Events of a run kept to go with its next report (hold). */
  private readonly held = new WeakMap<LeasedRun, RunReportEvent[]>();
  /** The report of a run on its way: the next one goes after it, so the hub sees them in order. */
  private readonly sending = new WeakMap<LeasedRun, Promise<unknown>>();

  constructor(private readonly opts: RunHubCallerOptions) {
    this.hub = opts.hub;
    this.attempts = opts.attempts ?? 20;
    this.backoff = opts.backoff ?? RUN_CALL_BACKOFF;
  }

  closing(): boolean {
    return this.opts.closing();
  }

  /** `attempts`: 1 for calls that a timer or a queue repeats anyway (renewals, log uploads). */
  async call<T>(
    run: LeasedRun,
    op: string,
    body: Record<string, unknown>,
    attempts = this.attempts,
  ): Promise<T> {
    // The run's reports, held or on their way, go first: the hub sees its calls in the order made.
    if (op !== 'runs/report') await this.reported(run);
    for (let attempt = 1; ; attempt++) {
      if (this.opts.closing()) throw new Closing('the daemon is stopping');
      if (run.fenced) throw new Fenced('fenced');
      try {
        return await this.opts.hub.call<T>(op, body);
      } catch (err) {
        if (err instanceof HubRefusedError && err.status === 409) {
          run.fence();
          throw new Fenced(err.message);
        }
        if (!(err instanceof HubUnreachableError) || attempt >= attempts) throw err;
        const delay = backoffDelay(attempt - 1, this.backoff, this.opts.random);
        await (this.opts.sleep ?? sleepFor)(delay);
      }
    }
  }

  /**
   * One `runs/report` for a run that does not execute here (a cancel of a run that ended, a run a
   * previous process left): true when the hub took it, false when it refused it (a stale epoch);
   * an unreachable hub is thrown.
   */
  async reportOnce(
    runId: string,
    epoch: number,
    event: string,
    extra: Record<string, unknown> = {},
  ): Promise<boolean> {
    try {
      await this.opts.hub.call('runs/report', { run_id: runId, lease_epoch: epoch, event, ...extra });
      return true;
    } catch (err) {
      if (err instanceof HubRefusedError) return false;
      throw err;
    }
  }

  /**
   * `runs/report` of an event under the run's lease, after the run's earlier reports, with the
   * events held before it: one call and one transaction on the hub for all of them.
   */
  report(run: LeasedRun, event: RunReportEvent['event'], extra: Omit<RunReportEvent, 'event'> = {}) {
    this.hold(run, event, extra);
    return this.send(run);
  }

  /**
   * Keeps an event to go with the run's next report or call (a run's start with its first phase's,
   * its last phase's end with its own) instead of a call of its own.
   */
  hold(run: LeasedRun, event: RunReportEvent['event'], extra: Omit<RunReportEvent, 'event'> = {}): void {
    const list = this.held.get(run);
    if (list) list.push({ event, ...extra });
    else this.held.set(run, [{ event, ...extra }]);
  }

  /**
   * Sends the run's held events now without waiting for them (a run that waits again for a verdict
   * after a restart says it started meanwhile). A refusal fences the run; an unreachable hub keeps
   * them held for its next report.
   */
  flush(run: LeasedRun): void {
    this.send(run).catch(() => {});
  }

  /** Resolves once the hub has taken the run's reports made so far, held ones sent now. */
  async reported(run: LeasedRun): Promise<void> {
    if (this.held.has(run) || this.sending.has(run)) await this.send(run);
  }

  /**
   * The run's held events, after its report on its way. When they went with that report (held
   * before it left), its outcome is theirs.
   */
  private send(run: LeasedRun): Promise<unknown> {
    const before = this.sending.get(run);
    const sent = (async () => {
      if (before) await before.catch(() => {});
      const events = this.take(run);
      return events.length > 0 ? this.sendReports(run, events) : before;
    })();
    this.sending.set(run, sent);
    const done = () => {
      if (this.sending.get(run) === sent) this.sending.delete(run);
    };
    sent.then(done, done);
    return sent;
  }

  private take(run: LeasedRun): RunReportEvent[] {
    const list = this.held.get(run) ?? [];
    this.held.delete(run);
    return list;
  }

  /**
   * Events in order, as few reports as the hub takes: each carries up to REPORT_NEXT_MAX more in
   * `next`, and its reply's `applied` says how many the hub applied (a hub that predates `next`
   * answers without it, having applied the first). What was not sent when the hub cannot be
   * reached is held again, for the run's next report; a refusal drops it. Answers the last reply.
   */
  private async sendReports(run: LeasedRun, events: RunReportEvent[]): Promise<unknown> {
    let reply: unknown;
    let rest = events;
    try {
      while (rest.length > 0) {
        const [first, ...more] = rest as [RunReportEvent, ...RunReportEvent[]];
        const next = more.slice(0, REPORT_NEXT_MAX);
        reply = await this.call(run, 'runs/report', {
          run_id: run.id,
          lease_epoch: run.epoch,
          ...first,
          ...(next.length > 0 ? { next } : {}),
        });
        const applied = (reply as { applied?: unknown } | null)?.applied;
        rest = rest.slice(typeof applied === 'number' && applied >= 1 ? applied : 1);
      }
      return reply;
    } catch (err) {
      if (rest.length > 0 && err instanceof HubUnreachableError)
        this.held.set(run, [...rest, ...this.take(run)]);
      throw err;
    }
  }
}
