import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeHubApi, leasedRun } from '../../../test/helpers/fake-hub-api.js';
import { REPORT_NEXT_MAX } from '../../shared/protocol.js';
import { HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { Closing, Fenced, RunHubCaller } from './hub-caller.js';

const unreachable = () => {
  throw new HubUnreachableError('hub unreachable: ECONNREFUSED');
};

/** A caller whose waits are recorded instead of slept; `random` 0.5 takes half of each ceiling. */
function callerOf(
  hub: ReturnType<typeof fakeHubApi>,
  opts: { attempts?: number; closing?: () => boolean } = {},
) {
  const waits: number[] = [];
  const caller = new RunHubCaller({
    hub,
    closing: opts.closing ?? (() => false),
    ...(opts.attempts ? { attempts: opts.attempts } : {}),
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  return { caller, waits };
}

describe('hub calls under a run’s lease', () => {
  it('tries an unreachable hub again with growing waits, then takes its answer', async () => {
    let failures = 3;
    const hub = fakeHubApi(() => (failures-- > 0 ? unreachable() : { id: 'rv1' }));
    const { caller, waits } = callerOf(hub);
    const run = leasedRun();
    assert.deepEqual(await caller.call(run, 'reviews/request', { run_id: run.id }), { id: 'rv1' });
    assert.equal(hub.calls.length, 4);
    assert.deepEqual(waits, [100, 200, 400]);
    assert.equal(run.fenced, false);
  });

  it('gives up after the set number of attempts, the waits capped at 5 s', async () => {
    const hub = fakeHubApi(unreachable);
    const { caller, waits } = callerOf(hub, { attempts: 8 });
    await assert.rejects(caller.call(leasedRun(), 'runs/report', {}), HubUnreachableError);
    assert.equal(hub.calls.length, 8);
    assert.deepEqual(waits, [100, 200, 400, 800, 1600, 2500, 2500]);
  });

  it('tries 20 times by default', async () => {
    const hub = fakeHubApi(unreachable);
    const { caller, waits } = callerOf(hub);
    await assert.rejects(caller.call(leasedRun(), 'runs/report', {}), HubUnreachableError);
    assert.equal(hub.calls.length, 20);
    assert.equal(waits.length, 19);
  });

  it('fences the run on a conflict and calls nothing more for it', async () => {
    const hub = fakeHubApi(() => {
      throw new HubRefusedError(409, 'conflict', 'lease epoch 3 is stale');
    });
    const { caller, waits } = callerOf(hub);
    const run = leasedRun();
    await assert.rejects(caller.call(run, 'runs/report', {}), (err: Error) => {
      assert.ok(err instanceof Fenced);
      assert.equal(err.message, 'lease epoch 3 is stale');
      return true;
    });
    assert.equal(run.fences, 1);
    assert.deepEqual(waits, []);
    await assert.rejects(caller.call(run, 'runs/report', {}), Fenced);
    assert.equal(hub.calls.length, 1);
  });

  it('passes any other refusal on at once, without fencing', async () => {
    const hub = fakeHubApi(() => {
      throw new HubRefusedError(400, 'validation_failed', 'bad phase');
    });
    const { caller, waits } = callerOf(hub);
    const run = leasedRun();
    await assert.rejects(caller.call(run, 'runs/start_child', {}), HubRefusedError);
    assert.equal(hub.calls.length, 1);
    assert.deepEqual(waits, []);
    assert.equal(run.fenced, false);
  });

  it('makes a single attempt when asked to', async () => {
    const hub = fakeHubApi(unreachable);
    const { caller, waits } = callerOf(hub);
    await assert.rejects(caller.call(leasedRun(), 'runs/renew_lease', {}, 1), HubUnreachableError);
    assert.equal(hub.calls.length, 1);
    assert.deepEqual(waits, []);
  });

  it('calls nothing while the daemon is stopping, and stops retrying when it begins to', async () => {
    let closing = false;
    const hub = fakeHubApi(() => {
      closing = true;
      unreachable();
    });
    const { caller } = callerOf(hub, { closing: () => closing });
    await assert.rejects(caller.call(leasedRun(), 'runs/report', {}), Closing);
    assert.equal(hub.calls.length, 1);
    await assert.rejects(caller.call(leasedRun(), 'runs/report', {}), Closing);
    assert.equal(hub.calls.length, 1);
  });

  it('reports an event with the run’s id and lease epoch', async () => {
    const hub = fakeHubApi(() => ({}));
    const { caller } = callerOf(hub);
    await caller.report(leasedRun('run_9', 7), 'phase.completed', { phase: 'build', outputs: { n: 1 } });
    assert.deepEqual(hub.calls, [
      {
        op: 'runs/report',
        body: {
          run_id: 'run_9',
          lease_epoch: 7,
          event: 'phase.completed',
          phase: 'build',
          outputs: { n: 1 },
        },
      },
    ]);
  });
});

describe('held events go with the run’s next report', () => {
  const ev = (body: Record<string, unknown>) => {
    const { run_id: _id, lease_epoch: _epoch, ...rest } = body;
    return rest;
  };

  it('one call for the held events and the report, in order; the hub says how many it applied', async () => {
    const hub = fakeHubApi((_op, body) => ({ applied: 1 + ((body.next as unknown[]) ?? []).length }));
    const { caller } = callerOf(hub);
    const run = leasedRun('run_9', 7);
    caller.hold(run, 'started');
    await caller.report(run, 'phase.started', { phase: 'build', pid: 42 });
    caller.hold(run, 'phase.completed', { phase: 'build', outputs: { n: 1 } });
    await caller.report(run, 'succeeded');
    assert.deepEqual(hub.callsOf('runs/report'), [
      {
        run_id: 'run_9',
        lease_epoch: 7,
        event: 'started',
        next: [{ event: 'phase.started', phase: 'build', pid: 42 }],
      },
      {
        run_id: 'run_9',
        lease_epoch: 7,
        event: 'phase.completed',
        phase: 'build',
        outputs: { n: 1 },
        next: [{ event: 'succeeded' }],
      },
    ]);
  });

  it('a hub that answers without applied took the first event: the others follow one at a time', async () => {
    const hub = fakeHubApi(() => ({ state: 'running' }));
    const { caller } = callerOf(hub);
    const run = leasedRun();
    caller.hold(run, 'started');
    caller.hold(run, 'phase.started', { phase: 'a' });
    await caller.report(run, 'phase.completed', { phase: 'a' });
    assert.deepEqual(
      hub
        .callsOf('runs/report')
        .map((b) => [b.event, (b.next as { event: string }[] | undefined)?.map((n) => n.event)]),
      [
        ['started', ['phase.started', 'phase.completed']],
        ['phase.started', ['phase.completed']],
        ['phase.completed', undefined],
      ],
    );
  });

  it('at most REPORT_NEXT_MAX more per call', async () => {
    const hub = fakeHubApi((_op, body) => ({ applied: 1 + ((body.next as unknown[]) ?? []).length }));
    const { caller } = callerOf(hub);
    const run = leasedRun();
    for (let i = 0; i < REPORT_NEXT_MAX + 2; i++) caller.hold(run, 'phase.started', { phase: `p${i}` });
    await caller.report(run, 'succeeded');
    const sent = hub.callsOf('runs/report');
    assert.deepEqual(
      sent.map((b) => 1 + ((b.next as unknown[]) ?? []).length),
      [REPORT_NEXT_MAX + 1, 2],
    );
    assert.deepEqual(
      sent
        .flatMap((b) => [ev(b), ...((b.next as Record<string, unknown>[]) ?? [])])
        .map((e) => e.phase ?? e.event),
      [...Array.from({ length: REPORT_NEXT_MAX + 2 }, (_, i) => `p${i}`), 'succeeded'],
    );
  });

  it('any other call of the run sends them first', async () => {
    const hub = fakeHubApi((op) => (op === 'runs/report' ? { applied: 1 } : { appended: 1 }));
    const { caller } = callerOf(hub);
    const run = leasedRun();
    caller.hold(run, 'started');
    await caller.call(run, 'runs/append_logs', { run_id: run.id, lines: [] }, 1);
    assert.deepEqual(
      hub.calls.map((c) => c.op),
      ['runs/report', 'runs/append_logs'],
    );
    await caller.report(run, 'succeeded');
    assert.deepEqual(ev(hub.callsOf('runs/report')[1]!), { event: 'succeeded' });
  });

  it('reported() sends what is held and resolves once the hub took every report of the run', async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const hub = fakeHubApi(async (_op, body) => {
      order.push(`in ${body.event}`);
      if (body.event === 'phase.started') await gate;
      order.push(`out ${body.event}`);
      return { applied: 1 + ((body.next as unknown[]) ?? []).length };
    });
    const { caller } = callerOf(hub);
    const run = leasedRun();
    const first = caller.report(run, 'phase.started', { phase: 'a' });
    caller.hold(run, 'awaiting_input');
    const taken = caller.reported(run).then(() => order.push('reported'));
    const later = caller.report(run, 'input.received');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(order, ['in phase.started'], 'nothing overtakes the report on its way');
    release();
    await Promise.all([first, taken, later]);
    // What was held while the first report was on its way left together, after it.
    assert.deepEqual(order, [
      'in phase.started',
      'out phase.started',
      'in awaiting_input',
      'out awaiting_input',
      'reported',
    ]);
    assert.deepEqual(hub.callsOf('runs/report')[1]!.next, [{ event: 'input.received' }]);
  });

  it('an unreachable hub keeps them for the next report; a refusal drops them', async () => {
    let down = true;
    const hub = fakeHubApi((_op, body) => {
      if (down) unreachable();
      return { applied: 1 + ((body.next as unknown[]) ?? []).length };
    });
    const { caller } = callerOf(hub, { attempts: 1 });
    const run = leasedRun();
    caller.hold(run, 'started');
    await assert.rejects(caller.report(run, 'phase.started', { phase: 'a' }), HubUnreachableError);
    down = false;
    await caller.report(run, 'phase.completed', { phase: 'a' });
    assert.deepEqual(hub.callsOf('runs/report').at(-1)!.next, [
      { event: 'phase.started', phase: 'a' },
      { event: 'phase.completed', phase: 'a' },
    ]);

    const refusing = fakeHubApi(() => {
      throw new HubRefusedError(400, 'invalid_params', 'bad phase');
    });
    const other = callerOf(refusing).caller;
    const r2 = leasedRun('run_2');
    other.hold(r2, 'started');
    await assert.rejects(other.report(r2, 'phase.started', { phase: 'a' }), HubRefusedError);
    await assert.rejects(other.report(r2, 'failed'), HubRefusedError);
    assert.deepEqual(ev(refusing.callsOf('runs/report')[1]!), { event: 'failed' });
  });
});

describe('a report for a run that does not execute here', () => {
  it('is made once: true when the hub took it, false when it refused it, an unreachable hub thrown', async () => {
    const answers: (() => unknown)[] = [
      () => ({}),
      () => {
        throw new HubRefusedError(409, 'conflict', 'stale');
      },
      unreachable,
    ];
    const hub = fakeHubApi(() => answers.shift()!());
    const { caller, waits } = callerOf(hub);
    assert.equal(await caller.reportOnce('run_1', 2, 'cancelled', { error: 'why' }), true);
    assert.equal(await caller.reportOnce('run_1', 2, 'cancelled'), false);
    await assert.rejects(caller.reportOnce('run_1', 2, 'failed'), HubUnreachableError);
    assert.deepEqual(hub.callsOf('runs/report'), [
      { run_id: 'run_1', lease_epoch: 2, event: 'cancelled', error: 'why' },
      { run_id: 'run_1', lease_epoch: 2, event: 'cancelled' },
      { run_id: 'run_1', lease_epoch: 2, event: 'failed' },
    ]);
    assert.deepEqual(waits, []);
  });
});
