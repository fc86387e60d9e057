import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TEST_DB } from '../../../test/helpers/db.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import type { RunsTable } from '../../db/schema.js';
import type { RunState } from '../../shared/api/run-states.js';
import { insertRunRows } from '../runs/runs.repo.js';
import type { RunningHub } from '../server.js';
import { emptyRemoved, retentionPass } from './retention.service.js';

/**
 * Retention over 10,000 runs inserted in bulk (CONTRACT.md §13): `retention.runs_days` removes old
 * terminal run trees with their history, logs and reviews; `retention.logs_days` removes the logs of
 * older kept runs; acknowledged commands and finished deliveries go after 7 days, unless a record
 * still points at them. On PostgreSQL two hub processes run the pass at once and every row is
 * removed, and counted, exactly once.
 */

const DAY = 24 * 60 * 60 * 1000;
const CHUNK = 500;

describe('retention', () => {
  let h: TestHub;
  let w: World;
  let other: RunningHub | null = null;
  const now = Date.now();
  let seq = 0;
  const id = (p: string) => `${p}-${(++seq).toString().padStart(7, '0')}`;

  before(async () => {
    // The background loops stay out of the way: the test runs the passes itself.
    h = await startTestHub({ config: { retentionMs: 3_600_000 } });
    w = await buildWorld(h);
  });
  after(async () => {
    await other?.close();
    await h.close();
  });

  function run(state: RunState, endedDaysAgo: number | null, more: Partial<RunsTable> = {}): RunsTable {
    const at = now - (endedDaysAgo ?? 60) * DAY;
    return {
      run_id: id('run'),
      org_id: w.orgId,
      realm_id: w.realmId,
      workspace_id: null,
      workspace_path: null,
      team_id: null,
      team_version_id: null,
      agent_id: null,
      daemon_id: null,
      parent_run_id: null,
      parent_phase: null,
      root_run_id: null,
      call_path: null,
      call_depth: 0,
      iteration_key: null,
      child_key: null,
      run_name: 'bulk',
      state,
      inputs: '{}',
      outputs: '{}',
      error: null,
      execution_type: 'team',
      current_pid: null,
      current_phase: null,
      external_id: null,
      context_labels: null,
      reviewers: null,
      notify_channels: null,
      lease_epoch: 1,
      // Runs still going hold a lease far ahead, so the lease sweeper leaves them alone meanwhile.
      lease_expires_at: endedDaysAgo === null ? now + 30 * DAY : at,
      queue_item_id: null,
      pending_control: null,
      control_tx_id: null,
      started_at: at - 1000,
      completed_at: endedDaysAgo === null ? null : at,
      state_lost_at: null,
      terminated_at: null,
      terminated_by_user_id: null,
      terminated_reason: null,
      created_by_user_id: null,
      created_at: at - 2000,
      updated_at: at,
      logs_pruned_at: null,
      priority: 5,
      concurrency: null,
      waiting_for: null,
      queue_deadline_at: null,
      run_deadline_at: null,
      ...more,
    };
  }

  async function insertAll(rows: RunsTable[]) {
    const db = h.running.hub.db;
    await insertRunRows(db, rows, CHUNK);
    for (let i = 0; i < rows.length; i += CHUNK) {
      const part = rows.slice(i, i + CHUNK);
      await db
        .insertInto('run_history')
        .values(
          part.map((r) => ({
            id: id('h'),
            run_id: r.run_id,
            type: 'run.ended',
            at: r.updated_at,
            from_phase: null,
            phase: null,
            state: r.state,
            error: null,
            actor: null,
            data: null,
          })),
        )
        .execute();
      await db
        .insertInto('run_logs')
        .values(
          part.flatMap((r) =>
            [1, 2].map((n) => ({
              run_id: r.run_id,
              seq: n,
              at: r.updated_at,
              stream: 'stdout',
              phase: null,
              text: 'line',
            })),
          ),
        )
        .execute();
    }
  }

  const count = async (
    table:
      | 'runs'
      | 'run_logs'
      | 'run_history'
      | 'reviews'
      | 'command_outbox'
      | 'notification_deliveries'
      | 'events',
  ) =>
    Number(
      (
        await h.running.hub.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('removes what is due, exactly once across hub processes, and nothing else', {
    timeout: 600_000,
  }, async () => {
    const db = h.running.hub.db;
    const terminal: RunState[] = ['succeeded', 'failed', 'cancelled', 'terminated', 'lost'];
    // A: 6,000 old top-level terminal runs, 500 of them with two children each → removed, trees whole.
    const oldRoots = Array.from({ length: 6000 }, (_, i) => run(terminal[i % 5]!, 40));
    const oldChildren = oldRoots
      .slice(0, 500)
      .flatMap((p) =>
        [1, 2].map(() =>
          run('succeeded', 41, { parent_run_id: p.run_id, root_run_id: p.run_id, call_depth: 1 }),
        ),
      );
    // B: 3,000 terminal runs older than the logs limit only → kept, logs removed.
    const middle = Array.from({ length: 3000 }, (_, i) => run(terminal[i % 5]!, 10));
    // C: 490 recent terminal runs, D: 490 runs still going (old) → kept whole.
    const recent = Array.from({ length: 490 }, () => run('succeeded', 1));
    const going = Array.from({ length: 490 }, (_, i) => run(i % 2 ? 'running' : 'queued', null));
    // E: 20 runs still going whose children ended long ago → the trees stay (the children's logs go).
    const liveRoots = Array.from({ length: 20 }, () => run('awaiting_input', null));
    const liveChildren = liveRoots.map((p) =>
      run('succeeded', 50, { parent_run_id: p.run_id, root_run_id: p.run_id, call_depth: 1 }),
    );
    const all = [...oldRoots, ...oldChildren, ...middle, ...recent, ...going, ...liveRoots, ...liveChildren];
    assert.equal(oldRoots.length + middle.length + recent.length + going.length + liveRoots.length, 10_000);
    await insertAll(all);

    // Reviews of 100 old runs and of 10 recent ones.
    const reviewOf = (r: RunsTable) => ({
      id: id('rv'),
      org_id: w.orgId,
      realm_id: w.realmId,
      run_id: r.run_id,
      daemon_id: w.daemonId,
      lease_epoch: 1,
      phase: 'p',
      kind: 'phase' as const,
      round: 1,
      summary: 's',
      state: 'approved' as const,
      reviewers: null,
      requested_at: r.updated_at,
      deadline_at: null,
      closed_at: r.updated_at,
      closed_by: null,
      verdict_action: 'approve' as const,
      verdict_comment: null,
    });
    await db
      .insertInto('reviews')
      .values([...oldRoots.slice(0, 100), ...recent.slice(0, 10)].map(reviewOf))
      .execute();

    // Commands: old acknowledged ones go, unless a run's control still names one; others stay.
    const command = (status: 'pending' | 'acked', daysAgo: number) => ({
      tx_id: id('tx'),
      daemon_id: w.daemonId,
      path: 'runs/cancel',
      body: '{}',
      status,
      ack_status: status === 'acked' ? ('ok' as const) : null,
      reply: null,
      error: null,
      created_at: now - daysAgo * DAY,
      seq: ++seq,
      last_sent_at: null,
      acked_at: status === 'acked' ? now - daysAgo * DAY : null,
      attempts: 1,
    });
    const oldAcked = Array.from({ length: 300 }, () => command('acked', 8));
    const pointedAt = command('acked', 9);
    const kept = [pointedAt, command('acked', 6), command('pending', 9)];
    await db
      .insertInto('command_outbox')
      .values([...oldAcked, ...kept])
      .execute();
    await db
      .updateTable('runs')
      .set({ control_tx_id: pointedAt.tx_id })
      .where('run_id', '=', recent[0]!.run_id)
      .execute();

    // Deliveries: finished over 7 days ago go; pending or recent stay.
    const channel = await h.ok('notification_channels/new', {
      realm_id: w.realmId,
      name: 'retention',
      destinations: [{ type: 'webhook', webhook_url: 'https://example.test/h' }],
      enabled: false,
    });
    const delivery = (state: 'pending' | 'succeeded' | 'failed' | 'cancelled', daysAgo: number) => ({
      id: id('dl'),
      channel_id: channel.data.id,
      event_id: id('ev'),
      event_type: 'run.ended',
      kind: 'event' as const,
      destination_index: 0,
      destination_type: 'webhook',
      url: 'https://example.test/h',
      body: '{}',
      state,
      attempts: 1,
      next_attempt_at: now + DAY,
      lease_owner: null,
      lease_until: null,
      last_status_code: null,
      last_latency_ms: null,
      last_error: null,
      created_at: now - daysAgo * DAY,
      updated_at: now - daysAgo * DAY,
      completed_at: state === 'pending' ? null : now - daysAgo * DAY,
    });
    const oldDone = [
      ...Array.from({ length: 100 }, () => delivery('succeeded', 8)),
      ...Array.from({ length: 20 }, () => delivery('failed', 30)),
      delivery('cancelled', 8),
    ];
    const pending = delivery('pending', 9);
    await db
      .insertInto('notification_deliveries')
      .values([...oldDone, pending, delivery('succeeded', 6)])
      .execute();
    // Events: old ones go once no delivery refers to them (a finished one goes in the same pass);
    // one a pending delivery refers to stays, however old, and so do recent ones.
    const event = (eventId: string, daysAgo: number) => ({
      id: eventId,
      type: 'run.ended',
      org_id: w.orgId,
      realm_id: w.realmId,
      subject_id: 'r',
      payload: '{}',
      created_at: now - daysAgo * DAY,
    });
    const oldEvents = [
      ...Array.from({ length: 50 }, () => event(id('ev'), 8)),
      event(oldDone[0]!.event_id, 8),
    ];
    await db
      .insertInto('events')
      .values([...oldEvents, event(pending.event_id, 30), event(id('ev'), 6)])
      .execute();

    const before = {
      runs: await count('runs'),
      run_logs: await count('run_logs'),
      run_history: await count('run_history'),
      command_outbox: await count('command_outbox'),
      notification_deliveries: await count('notification_deliveries'),
      events: await count('events'),
    };
    await h.ok('settings/set', { key: 'retention.runs_days', value: '30' });
    await h.ok('settings/set', { key: 'retention.logs_days', value: '7' });

    const hubs = [h.running.hub];
    if (TEST_DB === 'postgres') {
      other = await h.startAnother({ config: { retentionMs: 3_600_000 } });
      hubs.push(other.hub);
    }
    const results = await Promise.all(hubs.map((hub) => retentionPass(hub, { batch: 200 })));
    const sum = emptyRemoved();
    for (const r of results) for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += r[k];
    if (hubs.length === 2)
      assert.ok(
        results.every((r) => r.runs > 0),
        'both processes took a share',
      );

    const removedRuns = oldRoots.length + oldChildren.length;
    const prunedLogRuns = middle.length + liveChildren.length;
    assert.equal(sum.runs, removedRuns);
    assert.equal(sum.run_history, removedRuns);
    assert.equal(sum.reviews, 100);
    assert.equal(sum.run_logs, 2 * (removedRuns + prunedLogRuns));
    assert.equal(sum.log_bytes, 'line'.length * 2 * (removedRuns + prunedLogRuns));
    assert.equal(sum.command_outbox, oldAcked.length);
    assert.equal(sum.notification_deliveries, oldDone.length);
    assert.equal(sum.events, oldEvents.length);
    assert.equal(await count('events'), before.events - oldEvents.length);
    assert.ok(
      await db.selectFrom('events').select('id').where('id', '=', pending.event_id).executeTakeFirst(),
    );

    assert.equal(await count('runs'), before.runs - removedRuns);
    assert.equal(await count('run_history'), before.run_history - removedRuns);
    assert.equal(await count('run_logs'), before.run_logs - 2 * (removedRuns + prunedLogRuns));
    assert.equal(await count('reviews'), 10);
    assert.equal(await count('command_outbox'), before.command_outbox - oldAcked.length);
    assert.equal(await count('notification_deliveries'), before.notification_deliveries - oldDone.length);
    const left = new Set((await db.selectFrom('runs').select('run_id').execute()).map((r) => r.run_id));
    for (const r of [...middle, ...recent, ...going, ...liveRoots, ...liveChildren])
      assert.ok(left.has(r.run_id));
    const logsLeft = await db.selectFrom('run_logs').select('run_id').distinct().execute();
    assert.deepEqual(
      new Set(logsLeft.map((r) => r.run_id)),
      new Set([...recent, ...going, ...liveRoots].map((r) => r.run_id)),
    );
    const kept2 = await db.selectFrom('command_outbox').select('tx_id').execute();
    assert.deepEqual(new Set(kept2.map((r) => r.tx_id)), new Set(kept.map((c) => c.tx_id)));

    // A pruned run is not_found; a run whose logs went keeps its history.
    const gone = await h.call('runs/get_by_id', { run_id: oldRoots[0]!.run_id });
    assert.equal(gone.status, 404);
    const pruned = await h.ok('runs/get_by_id', { run_id: middle[0]!.run_id, with_history: true });
    assert.equal(pruned.data.history.length, 1);
    assert.deepEqual((await h.ok('runs/logs', { run_id: middle[0]!.run_id })).data, []);

    // Again: nothing more to do.
    const again = await Promise.all(hubs.map((hub) => retentionPass(hub, { batch: 200 })));
    for (const r of again) assert.deepEqual(r, emptyRemoved());
  });

  it('the background job removes old runs and /metrics counts them; bad settings answer invalid_params', async () => {
    const rows = Array.from({ length: 30 }, () => run('succeeded', 90));
    await insertAll(rows);
    for (const value of ['0', '-1', 'soon', '']) {
      const r = await h.call('settings/set', { key: 'retention.runs_days', value });
      assert.equal(r.status, 400, value);
      assert.equal(r.body.code, 'invalid_params');
    }
    const looping = await h.startAnother({ config: { retentionMs: 50 } });
    try {
      const deadline = Date.now() + 20_000;
      let text = '';
      while (Date.now() < deadline) {
        text = await (await fetch(`${looping.url}/metrics`)).text();
        if (/svc_hub_retention_rows_removed_total\{table="runs"\} 30\b/.test(text)) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.match(text, /svc_hub_retention_rows_removed_total\{table="runs"\} 30\b/);
      assert.match(text, /svc_hub_retention_rows_removed_total\{table="run_logs"\} 60\b/);
      assert.match(text, /svc_hub_retention_log_bytes_removed_total 240\b/);
    } finally {
      await looping.close();
    }
  });
});
