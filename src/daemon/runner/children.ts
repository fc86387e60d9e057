import { isTerminal } from '../../shared/api/run-states.js';
import type { ExecuteRunBody, RunPhase } from '../../shared/protocol.js';
import { HubRefusedError } from '../hub-api.js';
import type { ActiveRun } from './active-run.js';
import type { RunHubCaller } from './hub-caller.js';
import { childFailure, childInputs, foreachItems, foreachKey } from './plan.js';

/** How a child run ended, as `runs/child_ended` (or `runs/get_by_id`) tells it. */
export interface ChildResult {
  state: string;
  outputs: Record<string, unknown>;
  error: unknown;
}

export type PhaseResult = { ok: true; outputs: unknown } | { ok: false; error: string };

export interface ChildRunsOptions {
  caller: RunHubCaller;
  /** A `foreach` phase runs at most this many children at once unless it sets max_parallel. */
  maxParallel: number;
  /** How often a waiting parent asks the hub about its child, in case a `runs/child_ended` was lost (default 5 s). */
  pollMs?: number;
}

/**
 * Team phases: one child run through the hub (`runs/start_child`), or one per element of a `foreach`
 * list, at most `max_parallel` at once. A child's end arrives as `runs/child_ended` (possibly before
 * `runs/start_child` answered); polling the hub is a safety net for a lost one.
 */
export class ChildRuns {
  private readonly waiters = new Map<string, (r: ChildResult) => void>();
  private readonly early = new Map<string, ChildResult>();

  constructor(private readonly opts: ChildRunsOptions) {}

  /** `runs/child_ended`: wakes the parent that waits for it, or keeps the result for it. */
  ended(childRunId: string, result: ChildResult): void {
    const waiter = this.waiters.get(childRunId);
    if (waiter) waiter(result);
    else this.early.set(childRunId, result);
  }

  /** Runs a team phase: `phase.started`, then its child run(s). */
  async runPhase(
    run: ActiveRun,
    body: Pick<ExecuteRunBody, 'inputs'>,
    phase: RunPhase,
    outputs: Record<string, unknown>,
  ): Promise<PhaseResult> {
    await this.opts.caller.report(run, 'phase.started', { phase: phase.name });
    if (phase.foreach === undefined) {
      const r = await this.start(run, phase, childInputs(body.inputs, phase), null);
      return r.state === 'succeeded'
        ? { ok: true, outputs: r.outputs }
        : { ok: false, error: childFailure(r.state, r.error) };
    }
    const list = foreachItems(phase.foreach, body.inputs, outputs);
    if ('error' in list) return { ok: false, error: list.error };
    return this.forEach(run, body, phase, list.items);
  }

  /** One child per element, at most `max_parallel` at once; the first failure starts no more. */
  private async forEach(
    run: ActiveRun,
    body: Pick<ExecuteRunBody, 'inputs'>,
    phase: RunPhase,
    items: unknown[],
  ): Promise<PhaseResult> {
    const limit = phase.max_parallel ?? this.opts.maxParallel;
    const results: unknown[] = new Array(items.length);
    let failed: string | null = null;
    let next = 0;
    const worker = async () => {
      while (next < items.length && failed === null && !run.stopped) {
        const index = next++;
        const item = items[index];
        const key = foreachKey(item, index);
        const r = await this.start(run, phase, childInputs(body.inputs, phase, { item, index }), key);
        if (r.state !== 'succeeded') failed ??= childFailure(r.state, r.error, key);
        results[index] = r.outputs;
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return failed === null ? { ok: true, outputs: results } : { ok: false, error: failed };
  }

  /** Starts a child run through the hub and waits for its end. A refused start fails the child. */
  async start(
    run: ActiveRun,
    phase: RunPhase,
    inputs: Record<string, unknown>,
    iterationKey: string | null,
  ): Promise<ChildResult> {
    let child: { run_id: string };
    try {
      child = await this.opts.caller.call<{ run_id: string }>(run, 'runs/start_child', {
        parent_run_id: run.id,
        lease_epoch: run.epoch,
        parent_phase: phase.name,
        team_version_id: phase.team_version_id,
        inputs,
        iteration_key: iterationKey,
      });
    } catch (err) {
      if (err instanceof HubRefusedError) return { state: 'failed', outputs: {}, error: err.message };
      throw err;
    }
    const early = this.early.get(child.run_id);
    if (early) {
      this.early.delete(child.run_id);
      return early;
    }
    return this.waitFor(run, child.run_id);
  }

  /** Until `runs/child_ended`, the poll sees the child ended, or the parent stops (the child counts as cancelled). */
  private waitFor(run: ActiveRun, childRunId: string): Promise<ChildResult> {
    const signal = run.abort.signal;
    return new Promise<ChildResult>((resolve) => {
      const done = (r: ChildResult) => {
        clearInterval(poll);
        this.waiters.delete(childRunId);
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onAbort = () => done({ state: 'cancelled', outputs: {}, error: 'the parent run stopped' });
      this.waiters.set(childRunId, done);
      signal.addEventListener('abort', onAbort);
      const poll = setInterval(async () => {
        try {
          const r = await this.opts.caller.hub.call<ChildResult>('runs/get_by_id', { run_id: childRunId });
          if (isTerminal(r.state)) done({ state: r.state, outputs: r.outputs ?? {}, error: r.error });
        } catch {}
      }, this.opts.pollMs ?? 5_000);
      poll.unref();
      if (signal.aborted) onAbort();
    });
  }
}
