import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeHubApi } from '../../../test/helpers/fake-hub-api.js';
import { createLogger } from '../../shared/logger.js';
import type { RunPhase } from '../../shared/protocol.js';
import { HubRefusedError } from '../hub-api.js';
import { ActiveRun } from './active-run.js';
import { type ChildResult, ChildRuns } from './children.js';
import { RunHubCaller } from './hub-caller.js';

const log = createLogger('test', 'silent');
const team: RunPhase = { name: 'fan', team_version_id: 'tv_child', inputs: { mode: 'fast' } };
const succeeded = (outputs: Record<string, unknown> = {}): ChildResult => ({
  state: 'succeeded',
  outputs,
  error: null,
});

/**
 * A parent run with a hub that starts children `c0`, `c1`, … and ends each as `end(n, inputs)` says,
 * on the next turn of the event loop (through `runs/child_ended`), or never when it answers null.
 */
function parentOf(end: (n: number, inputs: Record<string, unknown>) => ChildResult | null, pollMs?: number) {
  let started = 0;
  let running = 0;
  let mostAtOnce = 0;
  let children!: ChildRuns;
  const hub = fakeHubApi((op, body) => {
    if (op !== 'runs/start_child') return {};
    const n = started++;
    const result = end(n, body.inputs as Record<string, unknown>);
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    if (result)
      setImmediate(() => {
        running--;
        children.ended(`c${n}`, result);
      });
    return { run_id: `c${n}` };
  });
  const caller = new RunHubCaller({ hub, closing: () => false });
  children = new ChildRuns({ caller, maxParallel: 8, ...(pollMs ? { pollMs } : {}) });
  const run = new ActiveRun('run_p', 2, 30_000, 10, { caller, log, now: () => 1 });
  return { hub, children, run, mostAtOnce: () => mostAtOnce };
}

describe('child runs of a team phase', () => {
  it('starts one child with the parent’s and the phase’s inputs and takes its outputs', async () => {
    const p = parentOf(() => succeeded({ done: true }));
    const r = await p.children.runPhase(p.run, { inputs: { repo: 'r' } }, team, {});
    assert.deepEqual(r, { ok: true, outputs: { done: true } });
    assert.deepEqual(p.hub.calls[0], {
      op: 'runs/report',
      body: { run_id: 'run_p', lease_epoch: 2, event: 'phase.started', phase: 'fan' },
    });
    assert.deepEqual(p.hub.callsOf('runs/start_child'), [
      {
        parent_run_id: 'run_p',
        lease_epoch: 2,
        parent_phase: 'fan',
        team_version_id: 'tv_child',
        inputs: { repo: 'r', mode: 'fast' },
        iteration_key: null,
      },
    ]);
  });

  it('fails the phase with the child’s state and error', async () => {
    const p = parentOf(() => ({ state: 'failed', outputs: {}, error: 'exit 2' }));
    assert.deepEqual(await p.children.runPhase(p.run, { inputs: {} }, team, {}), {
      ok: false,
      error: 'child run failed: exit 2',
    });
  });

  it('takes a child’s end that arrived before runs/start_child answered', async () => {
    let children!: ChildRuns;
    const hub = fakeHubApi(() => {
      children.ended('c_fast', succeeded({ fast: 1 }));
      return { run_id: 'c_fast' };
    });
    const caller = new RunHubCaller({ hub, closing: () => false });
    children = new ChildRuns({ caller, maxParallel: 8 });
    const run = new ActiveRun('run_p', 2, 30_000, 10, { caller, log, now: () => 1 });
    assert.deepEqual(await children.start(run, team, {}, null), succeeded({ fast: 1 }));
  });

  it('fails a child the hub refused to start', async () => {
    const hub = fakeHubApi(() => {
      throw new HubRefusedError(400, 'validation_failed', 'call depth exceeded');
    });
    const caller = new RunHubCaller({ hub, closing: () => false });
    const run = new ActiveRun('run_p', 2, 30_000, 10, { caller, log, now: () => 1 });
    assert.deepEqual(await new ChildRuns({ caller, maxParallel: 8 }).start(run, team, {}, null), {
      state: 'failed',
      outputs: {},
      error: 'call depth exceeded',
    });
  });

  it('counts a child as cancelled when the parent stops while it waits', async () => {
    const p = parentOf(() => null);
    const waiting = p.children.start(p.run, team, {}, null);
    await new Promise((r) => setImmediate(r));
    p.run.cancel('stop');
    assert.deepEqual(await waiting, { state: 'cancelled', outputs: {}, error: 'the parent run stopped' });
  });

  it('learns a child’s end from the hub when runs/child_ended was lost', async () => {
    let polls = 0;
    const hub = fakeHubApi((op) => {
      if (op === 'runs/start_child') return { run_id: 'c_lost' };
      polls++;
      return polls < 2
        ? { state: 'running', outputs: {} }
        : { state: 'succeeded', outputs: { late: 1 }, error: null };
    });
    const caller = new RunHubCaller({ hub, closing: () => false });
    const run = new ActiveRun('run_p', 2, 30_000, 10, { caller, log, now: () => 1 });
    // The poll does not hold the process open (a daemon's server does): this test holds it.
    const hold = setInterval(() => {}, 1_000);
    const r = await new ChildRuns({ caller, maxParallel: 8, pollMs: 5 })
      .start(run, team, {}, null)
      .finally(() => clearInterval(hold));
    assert.deepEqual(r, { state: 'succeeded', outputs: { late: 1 }, error: null });
    assert.deepEqual(hub.callsOf('runs/get_by_id')[0], { run_id: 'c_lost' });
  });
});

describe('a foreach phase', () => {
  const foreach = (extra: Partial<RunPhase> = {}): RunPhase => ({
    ...team,
    foreach: 'inputs.files',
    ...extra,
  });

  it('runs one child per element, at most max_parallel at once, outputs in element order', async () => {
    const p = parentOf((n, inputs) => succeeded({ n, item: inputs.item }));
    const files = ['a', { key: 'b-key' }, 'c', 'd', 'e'];
    const r = await p.children.runPhase(p.run, { inputs: { files } }, foreach({ max_parallel: 2 }), {});
    assert.equal(p.mostAtOnce(), 2);
    assert.equal(r.ok, true);
    const items = (r as { outputs: { item: unknown }[] }).outputs.map((o) => o.item);
    assert.deepEqual(items, files);
    const starts = p.hub.callsOf('runs/start_child');
    assert.deepEqual(
      starts.map((s) => s.iteration_key),
      ['0', 'b-key', '2', '3', '4'],
    );
    assert.deepEqual(starts[1]!.inputs, { files, mode: 'fast', item: { key: 'b-key' }, index: 1 });
  });

  it('runs the daemon’s number of children at once when the phase sets none', async () => {
    const p = parentOf(() => succeeded());
    await p.children.runPhase(
      p.run,
      { inputs: { files: Array.from({ length: 12 }, (_, i) => i) } },
      foreach(),
      {},
    );
    assert.equal(p.mostAtOnce(), 8);
  });

  it('reads its list from an earlier phase’s outputs', async () => {
    const p = parentOf(() => succeeded());
    const r = await p.children.runPhase(p.run, { inputs: {} }, foreach({ foreach: 'phases.plan.parts' }), {
      plan: { parts: [1, 2] },
    });
    assert.deepEqual(r, { ok: true, outputs: [{}, {}] });
  });

  it('starts no more children after one fails, and names it by its key', async () => {
    const p = parentOf((n) => (n === 1 ? { state: 'failed', outputs: {}, error: 'broke' } : succeeded()));
    const files = [{ key: 'x' }, { key: 'y' }, { key: 'z' }];
    const r = await p.children.runPhase(p.run, { inputs: { files } }, foreach({ max_parallel: 1 }), {});
    assert.deepEqual(r, { ok: false, error: 'child run [y] failed: broke' });
    assert.equal(p.hub.callsOf('runs/start_child').length, 2);
  });

  it('fails without starting a child when its path is not a list', async () => {
    const p = parentOf(() => succeeded());
    const r = await p.children.runPhase(p.run, { inputs: { files: 'a' } }, foreach(), {});
    assert.deepEqual(r, { ok: false, error: 'foreach: inputs.files is not a list' });
    assert.equal(p.hub.callsOf('runs/start_child').length, 0);
  });
});
