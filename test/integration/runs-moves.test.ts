import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { reportRun } from '../../src/hub/runs/daemon.service.js';
import { claimRun } from '../../src/hub/runs/dispatch.service.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../helpers/runs.js';
import { connectDaemon, type TunnelClient } from '../helpers/tunnel-client.js';
import { buildWorld, type World } from '../helpers/world.js';

/**
 * Every state move a daemon can ask for, and the refused ones, driven by hand through a tunnel
 * client (the test plays the daemon), plus fencing with an older lease epoch.
 */
describe('run state moves and fencing', () => {
  let h: TestHub;
  let w: World;
  let t: TunnelClient;
  const agents = agentDir();
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const script = agents.write('noop', '');
    await registerAgent(h, w.orgId, 'noop', script);
    await registerTeam(h, w.orgId, 'solo', [{ name: 'only', agent: 'noop' }]);
    t = await connectDaemon(h.url, w.tokens.realm_token!);
  });
  after(async () => {
    await t?.close();
    await h?.close();
    agents.cleanup();
  });

  const dt = () => w.tokens.realm_token!;
  const report = (body: Record<string, unknown>) => h.call('runs/report', body, dt());

  /** A run offered to the tunnel client and claimed by it: answers the run id and its epoch. */
  /** The test daemon as `reportRun` sees its caller. */
  const daemonActor = async () => ({
    kind: 'daemon' as const,
    daemon: await h.running.hub.db
      .selectFrom('daemons')
      .selectAll()
      .where('id', '=', w.daemonId)
      .executeTakeFirstOrThrow(),
  });
  async function claimedRun(): Promise<{ runId: string; epoch: number }> {
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' }, w.tokens.realm_member)).data;
    const offer = await t.next('command');
    assert.equal(offer.path, 'offer_job');
    const body = offer.body as { queue_item_id: string; payload: { run_id: string } };
    assert.equal(body.payload.run_id, run.run_id);
    t.ack(offer.tx_id, { reply: { claimed: true } });
    const claim = await h.ok(
      'queue/claim',
      { queue_item_id: body.queue_item_id, daemon_id: w.daemonId },
      dt(),
    );
    assert.equal(claim.data.claimed, true);
    assert.equal(claim.data.run.run_id, run.run_id);
    const exec = await t.next('command');
    assert.equal(exec.path, 'runs/execute');
    const eb = exec.body as {
      run_id: string;
      lease_epoch: number;
      team: { phases: unknown[] };
      agents: object;
    };
    assert.equal(eb.run_id, run.run_id);
    assert.equal(eb.lease_epoch, claim.data.run.lease_epoch);
    assert.equal(eb.team.phases.length, 1);
    assert.equal(Object.keys(eb.agents).length, 1);
    t.ack(exec.tx_id, { reply: { accepted: true } });
    return { runId: run.run_id, epoch: eb.lease_epoch };
  }

  it('writes a new run offered at once; its claim assigns it with a new epoch, or not once it ended', async () => {
    const member = w.tokens.realm_member;
    const { runId, epoch } = await claimedRun();
    const row = await h.running.hub.db
      .selectFrom('runs')
      .selectAll()
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([row.state, row.daemon_id, row.lease_epoch], ['assigned', w.daemonId, 1]);
    assert.equal(epoch, 1);
    assert.ok(row.lease_expires_at > row.created_at, 'the claim gave the run a lease');
    const history = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true }, member)).data
      .history as { type: string; actor: unknown }[];
    assert.deepEqual(
      history.map((e) => e.type),
      ['run.queued', 'run.offered', 'run.claimed'],
    );
    assert.deepEqual(history[2]!.actor, { type: 'daemon', daemon_id: w.daemonId });

    // Cancelled while offered: a claim that comes after gets no run, and no runs/execute is sent.
    const created = await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' }, member);
    assert.equal(created.data.state, 'queued', 'runs/new shows the run as created');
    const offer = await t.next('command');
    const item = (offer.body as { queue_item_id: string }).queue_item_id;
    t.ack(offer.tx_id, { reply: { claimed: false } });
    await h.ok('runs/cancel', { run_id: created.data.run_id }, w.tokens.realm_operator);
    const late = await h.ok('queue/claim', { queue_item_id: item, daemon_id: w.daemonId }, dt());
    assert.equal(late.data.run, undefined, JSON.stringify(late.data));
    const after = await h.running.hub.db
      .selectFrom('runs')
      .selectAll()
      .where('run_id', '=', created.data.run_id)
      .executeTakeFirstOrThrow();
    assert.deepEqual([after.state, after.lease_epoch, after.daemon_id], ['cancelled', 0, null]);
    const executes = await h.running.hub.db
      .selectFrom('command_outbox')
      .select('tx_id')
      .where('path', '=', 'runs/execute')
      .where('body', 'like', `%${created.data.run_id}%`)
      .execute();
    assert.deepEqual(executes, []);
  });

  it('accepts every legal move and refuses the others with conflict', async () => {
    const { runId, epoch } = await claimedRun();
    const r = (event: string, extra: Record<string, unknown> = {}) =>
      report({ run_id: runId, lease_epoch: epoch, event, ...extra });
    // offered → succeeded / awaiting_input / input.received: refused.
    for (const ev of ['succeeded', 'awaiting_input', 'input.received', 'phase.started']) {
      const x = await r(ev, { phase: 'only' });
      assert.equal(x.status, 409, `${ev}: ${JSON.stringify(x.body)}`);
      assert.equal(x.body.code, 'conflict');
    }
    const started = await r('started');
    assert.equal(started.status, 200);
    // The reply is the run as the report left it.
    const stored = (await h.ok('runs/get_by_id', { run_id: runId }, w.tokens.realm_member)).data;
    assert.deepEqual(started.body.data, {
      run_id: runId,
      state: 'running',
      lease_epoch: epoch,
      lease_expires_at: stored.lease_expires_at,
      applied: 1,
    });
    const again = await r('started');
    assert.equal(again.status, 200, 'a retried started of the same epoch is a no-op, not a conflict');
    assert.equal(again.body.data.state, 'running');
    assert.equal((await r('input.received')).status, 409);
    const step = await r('phase.started', { phase: 'only', pid: 4242 });
    assert.equal(step.status, 200);
    const renewed = (await h.ok('runs/get_by_id', { run_id: runId }, w.tokens.realm_member)).data;
    assert.equal(step.body.data.lease_expires_at, renewed.lease_expires_at);
    assert.ok(renewed.lease_expires_at >= stored.lease_expires_at);
    let run = (await h.ok('runs/get_by_id', { run_id: runId })).data;
    assert.equal(run.state, 'running');
    assert.equal(run.current_phase, 'only');
    assert.equal(run.current_pid, 4242);
    assert.equal((await r('awaiting_input')).status, 200);
    assert.equal(
      (await r('phase.completed', { phase: 'only' })).status,
      409,
      'no phase step while awaiting input',
    );
    assert.equal((await r('input.received')).status, 200);
    assert.equal((await r('phase.completed', { phase: 'only', outputs: { n: 1 } })).status, 200);
    assert.equal((await r('succeeded')).status, 200);
    for (const ev of ['started', 'failed', 'cancelled', 'succeeded', 'awaiting_input']) {
      assert.equal((await r(ev)).status, 409, `succeeded → ${ev} must be refused`);
    }
    run = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data;
    assert.equal(run.state, 'succeeded');
    assert.deepEqual(run.outputs, { only: { n: 1 } });
    assert.deepEqual(
      run.history.map((e: { type: string }) => e.type),
      [
        'run.queued',
        'run.offered',
        'run.claimed',
        'run.started',
        'phase.started',
        'run.awaiting_input',
        'run.input_received',
        'phase.completed',
        'run.ended',
      ],
    );
    // Users: resume and cancel of a succeeded run are refused too.
    assert.equal((await h.call('runs/resume', { run_id: runId })).status, 409);
    assert.equal((await h.call('runs/cancel', { run_id: runId })).status, 409);
    const ft = await h.call('runs/force_terminate', { run_id: runId, reason: 'x' });
    assert.equal(ft.status, 409);
    assert.match(ft.body.error, /already_terminal/);
  });

  it('a report applies the events in next after its own, in order and in one transaction', async () => {
    const { runId, epoch } = await claimedRun();
    const base = { run_id: runId, lease_epoch: epoch };
    const history = async () =>
      (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data.history.map(
        (e: { type: string }) => e.type,
      );
    const before = await history();
    // A refused event anywhere refuses them all: `input.received` is no move for a running run.
    const refused = await report({
      ...base,
      event: 'started',
      next: [
        { event: 'phase.started', phase: 'only', pid: 7 },
        { event: 'input.received', phase: 'only' },
      ],
    });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.deepEqual(await history(), before, 'nothing of a refused report is kept');
    assert.equal((await h.ok('runs/get_by_id', { run_id: runId })).data.state, 'assigned');

    const tooMany = await report({
      ...base,
      event: 'started',
      next: Array.from({ length: 5 }, () => ({ event: 'phase.started', phase: 'only' })),
    });
    assert.equal(tooMany.status, 400);
    assert.equal(tooMany.body.code, 'invalid_params');

    const start = await report({
      ...base,
      event: 'started',
      next: [{ event: 'phase.started', phase: 'only', pid: 7 }],
    });
    assert.equal(start.status, 200);
    assert.equal(start.body.data.applied, 2);
    assert.equal(start.body.data.state, 'running');
    const running = (await h.ok('runs/get_by_id', { run_id: runId })).data;
    assert.equal(running.current_pid, 7);
    assert.equal(start.body.data.lease_expires_at, running.lease_expires_at);

    const end = await report({
      ...base,
      event: 'phase.completed',
      phase: 'only',
      outputs: { n: 2 },
      next: [{ event: 'succeeded' }],
    });
    assert.equal(end.status, 200);
    assert.deepEqual(
      { state: end.body.data.state, applied: end.body.data.applied },
      { state: 'succeeded', applied: 2 },
    );
    const run = (await h.ok('runs/get_by_id', { run_id: runId })).data;
    assert.equal(run.state, 'succeeded');
    assert.deepEqual(run.outputs, { only: { n: 2 } });
    assert.deepEqual((await history()).slice(before.length), [
      'run.started',
      'phase.started',
      'phase.completed',
      'run.ended',
    ]);
  });

  it('reports made together are applied together, and a refused one fails alone', async () => {
    const hub = h.running.hub;
    const actor = await daemonActor();
    const runs = [await claimedRun(), await claimedRun(), await claimedRun()];
    // In one turn of the event loop: one group.
    const replies = await Promise.allSettled(
      runs.map((r, i) =>
        reportRun(hub, actor, {
          run_id: r.runId,
          lease_epoch: i === 1 ? r.epoch - 1 : r.epoch,
          event: 'started',
          next: [{ event: 'phase.started', phase: 'only' }],
        }),
      ),
    );
    assert.deepEqual(
      replies.map((x) => (x.status === 'fulfilled' ? x.value.state : (x.reason as { code: string }).code)),
      ['running', 'conflict', 'running'],
    );
    const states = await Promise.all(
      runs.map(async (r) => (await h.ok('runs/get_by_id', { run_id: r.runId })).data.state),
    );
    assert.deepEqual(states, ['running', 'assigned', 'running']);
  });

  it('claims made together are decided together, and one that cannot be handed over fails alone', async () => {
    const hub = h.running.hub;
    const actor = await daemonActor();
    const offered: { runId: string; itemId: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' }, w.tokens.realm_member)).data;
      const offer = await t.next('command');
      t.ack(offer.tx_id, { reply: { claimed: true } });
      offered.push({ runId: run.run_id, itemId: (offer.body as { queue_item_id: string }).queue_item_id });
    }
    // The second run's `runs/execute` cannot be built: its claim fails, in a group with the others.
    const { definition } = hub.catalog;
    hub.catalog.definition = (db, orgId, run) =>
      'run_id' in run && run.run_id === offered[1]!.runId
        ? Promise.reject(new Error('definition unavailable'))
        : definition(db, orgId, run);
    const claim = (o: { itemId: string }) =>
      claimRun(hub, actor, { queue_item_id: o.itemId, daemon_id: w.daemonId });
    let replies: PromiseSettledResult<Awaited<ReturnType<typeof claim>>>[];
    try {
      replies = await Promise.allSettled(offered.map(claim));
    } finally {
      hub.catalog.definition = definition;
    }
    assert.deepEqual(
      replies.map((r) => (r.status === 'fulfilled' ? r.value.run?.run_id : (r.reason as Error).message)),
      [offered[0]!.runId, 'definition unavailable', offered[2]!.runId],
    );
    const state = async (o: { runId: string }) =>
      (await h.ok('runs/get_by_id', { run_id: o.runId })).data.state;
    assert.deepEqual(await Promise.all(offered.map(state)), ['assigned', 'offered', 'assigned']);
    // Nothing of the failed claim stayed: the item is still on offer, and claiming it again wins it.
    const again = await claim(offered[1]!);
    assert.equal(again.run?.run_id, offered[1]!.runId);
    const executes = [await t.next('command'), await t.next('command'), await t.next('command')];
    assert.deepEqual(
      executes.map((c) => [c.path, (c.body as { run_id: string }).run_id]).sort(),
      offered.map((o) => ['runs/execute', o.runId]).sort(),
    );
    for (const c of executes) t.ack(c.tx_id, { reply: { accepted: true } });
  });

  it('two reports of one run made together are applied in order, the second seeing the first', async () => {
    const hub = h.running.hub;
    const actor = await daemonActor();
    const [a, b] = [await claimedRun(), await claimedRun()];
    const replies = await Promise.all([
      reportRun(hub, actor, { run_id: a.runId, lease_epoch: a.epoch, event: 'started' }),
      reportRun(hub, actor, { run_id: b.runId, lease_epoch: b.epoch, event: 'started' }),
      reportRun(hub, actor, { run_id: a.runId, lease_epoch: a.epoch, event: 'phase.started', phase: 'only' }),
    ]);
    assert.deepEqual(
      replies.map((r) => r.state),
      ['running', 'running', 'running'],
    );
    const run = (await h.ok('runs/get_by_id', { run_id: a.runId, with_history: true })).data;
    assert.equal(run.current_phase, 'only');
    assert.deepEqual(run.history.map((e: { type: string }) => e.type).slice(-2), [
      'run.started',
      'phase.started',
    ]);
  });

  it('refuses report, renew_lease and append_logs with an older epoch (fencing)', async () => {
    const { runId, epoch } = await claimedRun();
    assert.equal((await report({ run_id: runId, lease_epoch: epoch, event: 'started' })).status, 200);
    const stale = epoch - 1;
    const x = await report({ run_id: runId, lease_epoch: stale, event: 'failed', error: 'old daemon' });
    assert.equal(x.status, 409);
    const renew = await h.call('runs/renew_lease', { runs: [{ run_id: runId, lease_epoch: stale }] }, dt());
    assert.equal(renew.status, 409);
    assert.deepEqual(
      renew.body.details.refused.map((e: { run_id: string }) => e.run_id),
      [runId],
    );
    const ok = await h.call('runs/renew_lease', { runs: [{ run_id: runId, lease_epoch: epoch }] }, dt());
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body.data.renewed, [runId]);
    const logs = await h.call(
      'runs/append_logs',
      { run_id: runId, lease_epoch: stale, lines: [{ stream: 'stdout', text: 'from the past' }] },
      dt(),
    );
    assert.equal(logs.status, 409);
    const good = await h.call(
      'runs/append_logs',
      { run_id: runId, lease_epoch: epoch, lines: [{ stream: 'stdout', text: 'now' }] },
      dt(),
    );
    assert.equal(good.status, 200);
    const lines = await h.ok('runs/logs', { run_id: runId });
    assert.deepEqual(
      lines.data.map((l: { text: string }) => l.text),
      ['now'],
    );
    // A user token cannot make daemon-side calls.
    const user = await h.call('runs/report', { run_id: runId, lease_epoch: epoch, event: 'failed' });
    assert.equal(user.status, 403);
    const run = (await h.ok('runs/get_by_id', { run_id: runId })).data;
    assert.equal(run.state, 'running');
  });

  it('a retried runs/start_child returns the child it already started, also under concurrency', async () => {
    const { runId, epoch } = await claimedRun();
    assert.equal((await report({ run_id: runId, lease_epoch: epoch, event: 'started' })).status, 200);
    const solo = await h.ok('teams/get', { org_id: w.orgId, name: 'solo' });
    const body = {
      parent_run_id: runId,
      lease_epoch: epoch,
      parent_phase: 'only',
      team_version_id: solo.data.team_version_id,
      iteration_key: '3',
    };
    const replies = await Promise.all([1, 2, 3, 4].map(() => h.call('runs/start_child', body, dt())));
    // One creates the child (201); the others get that same child (200).
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, 200, 200, 201]);
    const ids = new Set(replies.map((r) => r.body.data.run_id));
    assert.equal(ids.size, 1);
    const again = await h.ok('runs/start_child', body, dt());
    assert.equal(again.data.run_id, [...ids][0]);
    assert.equal(again.data.parent_run_id, runId);
    const other = await h.ok('runs/start_child', { ...body, iteration_key: '4' }, dt());
    assert.notEqual(other.data.run_id, again.data.run_id);
    const children = await h.running.hub.db
      .selectFrom('runs')
      .select('run_id')
      .where('parent_run_id', '=', runId)
      .execute();
    assert.equal(children.length, 2);
    // Each child was offered once: drain both offers.
    const offers = [await t.next('command'), await t.next('command')];
    assert.deepEqual(
      offers.map((o) => (o.body as { payload: { run_id: string } }).payload.run_id).sort(),
      [again.data.run_id, other.data.run_id].sort(),
    );
  });

  it('validates runs/new: team, realm and reviewers', async () => {
    const bad = await h.call('runs/new', { team: 'solo' });
    assert.equal(bad.status, 400);
    const unknown = await h.call('runs/new', { realm_id: w.realmId, team: 'nope' });
    assert.equal(unknown.status, 404);
    const rev = await h.call('runs/new', {
      realm_id: w.realmId,
      team: 'solo',
      reviewers: { only: ['no-such-handle'] },
    });
    assert.equal(rev.status, 400);
    const outsider = await h.call('runs/new', {
      realm_id: w.realmId,
      team: 'solo',
      reviewers: { only: [w.users.outsider!.handle] },
    });
    assert.equal(outsider.status, 400);
    const unknownChannel = await h.call('runs/new', {
      realm_id: w.realmId,
      team: 'solo',
      notify_channels: ['c1'],
    });
    assert.equal(unknownChannel.status, 400);
    assert.equal(unknownChannel.body.details.issues[0].field, 'notify_channels');
    const channel = await h.ok('notification_channels/new', {
      realm_id: w.realmId,
      name: 'run watchers',
      destinations: [{ type: 'webhook', webhook_url: 'https://hooks.example.test/svc' }],
    });
    const okRev = await h.call('runs/new', {
      realm_id: w.realmId,
      team: 'solo',
      run_name: 'named',
      reviewers: { only: [w.users.realm_member!.handle] },
      context_labels: ['a'],
      notify_channels: [channel.data.id],
    });
    assert.equal(okRev.status, 201, JSON.stringify(okRev.body));
    assert.equal(okRev.body.data.run_name, 'named');
    assert.deepEqual(okRev.body.data.reviewers, { only: [w.users.realm_member!.handle] });
    assert.equal(
      (await h.call('runs/new', { realm_id: w.realmId, team: 'solo' }, w.tokens.org_member)).status,
      403,
    );
    assert.equal((await h.call('runs/new', { realm_id: w.realmId, team: 'solo' }, dt())).status, 403);
    assert.equal(
      (await h.call('runs/cancel', { run_id: okRev.body.data.run_id }, w.tokens.realm_member)).status,
      403,
    );
    // The offer for it goes to the tunnel client; drain it.
    await t.next('command');
  });
});
