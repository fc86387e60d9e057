import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fakeDaemon } from '../../../test/helpers/fake-daemon.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { agentDir, registerAgent, registerTeam, waitForRun } from '../../../test/helpers/runs.js';
import { addOrgUser, buildWorld, type World } from '../../../test/helpers/world.js';

/**
 * Reviews on the hub, with the test playing the daemon (a real tunnel that acks every command):
 * requests, verdicts and their effects on the run, who may see and decide what, closed reviews,
 * expiry, and runs ending while a review is open. The loop with a real daemon and agent processes
 * is test/integration/reviews.test.ts.
 */

const REVIEW_FIELDS = [
  'id',
  'run_id',
  'realm_id',
  'org_id',
  'phase',
  'kind',
  'round',
  'summary',
  'outputs',
  'log_excerpt',
  'state',
  'reviewers',
  'requested_at',
  'deadline_at',
  'closed_at',
  'closed_by',
  'verdict',
  'run_name',
  'team_name',
  'can_submit',
];

describe('reviews (hub)', () => {
  let h: TestHub;
  let w: World;
  let daemon: Awaited<ReturnType<typeof fakeDaemon>>;
  /** A realm member who is named as reviewer nowhere. */
  let bystander: { id: string; handle: string; token: string };
  const agents = agentDir();
  const dt = () => w.tokens.realm_token!;

  before(async () => {
    h = await startTestHub({ config: { runSweepMs: 100 } });
    w = await buildWorld(h);
    bystander = await addOrgUser(h, w.orgId, 'bystander@acme.test', 'member');
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: bystander.id,
      role: 'member',
    });
    await registerAgent(h, w.orgId, 'noop', agents.write('noop', ''));
    await registerTeam(h, w.orgId, 'gated', [
      { name: 'draft', agent: 'noop', review: true, review_max_rounds: 2 },
      { name: 'publish', agent: 'noop' },
    ]);
    await registerTeam(h, w.orgId, 'hurried', [
      { name: 'draft', agent: 'noop', review: true, review_timeout_ms: 1000 },
    ]);
    daemon = await fakeDaemon(h.url, dt());
  });
  after(async () => {
    await daemon?.close();
    await h?.close();
    agents.cleanup();
  });

  /** A run of `team` claimed by the fake daemon and running its first phase. */
  async function runningRun(team = 'gated', extra: Record<string, unknown> = {}) {
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team, ...extra }, w.tokens.realm_member)).data;
    const offer = await daemon.waitFor((c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id);
    const claim = await h.ok(
      'queue/claim',
      { queue_item_id: offer.body.queue_item_id, daemon_id: w.daemonId },
      dt(),
    );
    const epoch = claim.data.run.lease_epoch as number;
    await h.ok('runs/report', { run_id: run.run_id, lease_epoch: epoch, event: 'started' }, dt());
    await h.ok(
      'runs/report',
      { run_id: run.run_id, lease_epoch: epoch, event: 'phase.started', phase: 'draft' },
      dt(),
    );
    return { runId: run.run_id as string, epoch };
  }

  const request = (runId: string, epoch: number, extra: Record<string, unknown> = {}) =>
    h.call(
      'reviews/request',
      {
        run_id: runId,
        lease_epoch: epoch,
        phase: 'draft',
        summary: 'A draft about otters',
        kind: 'phase',
        ...extra,
      },
      dt(),
    );

  async function openReview(team = 'gated', extra: Record<string, unknown> = {}) {
    const { runId, epoch } = await runningRun(team, extra);
    const r = await request(runId, epoch);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return { runId, epoch, review: r.body.data };
  }

  const submit = (reviewId: string, action: string, token: string | null, comment?: string) =>
    h.call('reviews/submit', { review_id: reviewId, action, ...(comment ? { comment } : {}) }, token);
  const run = async (runId: string) =>
    (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data;

  it('opens a review: the run awaits input, history and the event carry it, a retry gets the same one', async () => {
    const { runId, epoch, review } = await openReview('gated', {
      reviewers: { draft: [w.users.realm_member!.handle] },
    });
    assert.deepEqual(Object.keys(review).sort(), [...REVIEW_FIELDS].sort());
    assert.equal(review.state, 'open');
    assert.equal(review.kind, 'phase');
    assert.equal(review.round, 1);
    assert.equal(review.summary, 'A draft about otters');
    assert.deepEqual(review.reviewers, [w.users.realm_member!.handle]);
    assert.equal(review.deadline_at, null);
    assert.equal(review.team_name, 'gated');
    assert.equal(review.can_submit, false);
    const r = await run(runId);
    assert.equal(r.state, 'awaiting_input');
    assert.equal(r.current_phase, 'draft');
    const entry = r.history.at(-1);
    assert.equal(entry.type, 'review.requested');
    assert.equal(entry.state, 'awaiting_input');
    assert.equal(entry.data.review_id, review.id);
    assert.equal(entry.data.summary, 'A draft about otters');
    assert.equal(entry.actor.daemon_id, w.daemonId);
    // No rule matches it: the history is its only record (a run's events are kept in `events` with
    // the deliveries they cause, src/hub/events/events.ts).
    const events = await h.running.hub.db
      .selectFrom('events')
      .select('id')
      .where('type', '=', 'review.requested')
      .where('subject_id', '=', runId)
      .execute();
    assert.deepEqual(events, []);

    const again = await request(runId, epoch);
    assert.equal(again.status, 200);
    assert.equal(again.body.data.id, review.id);
    const stale = await request(runId, epoch - 1);
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'conflict');
    const other = await request(runId, epoch, { phase: 'nope' });
    assert.equal(other.status, 400);
    assert.equal(other.body.code, 'invalid_params');
    const byUser = await h.call(
      'reviews/request',
      { run_id: runId, lease_epoch: epoch, phase: 'draft', summary: 'x' },
      w.tokens.realm_operator,
    );
    assert.equal(byUser.status, 403);
  });

  it('lets listed reviewers and realm operators+ decide; others are forbidden; lists show what each may see', async () => {
    const listed = await openReview('gated', { reviewers: { draft: [w.users.realm_member!.handle] } });
    const unnamed = await openReview('gated');
    const ids = async (token: string | null, body: Record<string, unknown> = {}) =>
      (await h.ok('reviews/list', { realm_id: w.realmId, ...body }, token)).data.map(
        (r: { id: string }) => r.id,
      );

    // A member sees the reviews naming them; operators+ see all of the realm.
    const memberSees = await ids(w.tokens.realm_member);
    assert.ok(memberSees.includes(listed.review.id));
    assert.ok(!memberSees.includes(unnamed.review.id));
    assert.ok(!(await ids(bystander.token)).includes(listed.review.id));
    for (const t of [
      w.tokens.realm_operator,
      w.tokens.realm_admin,
      w.tokens.org_admin,
      w.tokens.site_admin,
    ]) {
      const seen = await ids(t);
      assert.ok(seen.includes(listed.review.id) && seen.includes(unnamed.review.id));
    }
    const mine = await h.ok('reviews/list', { realm_id: w.realmId, mine: true }, w.tokens.realm_member);
    assert.ok(mine.data.every((r: { can_submit: boolean }) => r.can_submit));
    assert.equal((await h.call('reviews/list', { realm_id: w.realmId }, w.tokens.org_member)).status, 403);
    assert.equal((await h.call('reviews/list', { realm_id: w.realmId }, dt())).status, 403);

    // Any realm member may read a review; can_submit says whether they may decide it.
    const got = await h.ok('reviews/get', { id: listed.review.id }, bystander.token);
    assert.equal(got.data.can_submit, false);
    assert.deepEqual(got.data.submissions, []);
    assert.equal(
      (await h.ok('reviews/get', { id: listed.review.id }, w.tokens.realm_member)).data.can_submit,
      true,
    );
    assert.equal((await h.call('reviews/get', { id: listed.review.id }, w.tokens.outsider)).status, 403);

    for (const [token, reviewId] of [
      [bystander.token, listed.review.id],
      [w.tokens.realm_member, unnamed.review.id],
      [w.tokens.org_member, listed.review.id],
      [dt(), listed.review.id],
    ] as const) {
      const r = await submit(reviewId, 'comment', token, 'hi');
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'forbidden');
    }
    assert.equal((await submit(listed.review.id, 'comment', w.tokens.realm_member, 'fine')).status, 200);
    assert.equal((await submit(unnamed.review.id, 'comment', w.tokens.realm_operator, 'ok')).status, 200);
    const missing = await submit('018f0000-0000-7000-8000-000000000000', 'approve', w.tokens.realm_operator);
    assert.equal(missing.status, 404);
  });

  it('approve: the run goes on, the daemon gets the verdict, history names the reviewer; a closed review refuses more', async () => {
    const { runId, review } = await openReview();
    const r = await submit(review.id, 'approve', w.tokens.realm_operator, 'ship it');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.state, 'approved');
    assert.deepEqual(r.body.data.verdict, { action: 'approve', comment: 'ship it' });
    assert.deepEqual(r.body.data.closed_by, {
      user_id: w.users.realm_operator!.id,
      handle: w.users.realm_operator!.handle,
    });
    assert.equal(r.body.data.can_submit, false);
    const after = await run(runId);
    assert.equal(after.state, 'running');
    const entry = after.history.at(-1);
    assert.equal(entry.type, 'review.submitted');
    assert.equal(entry.actor.user_id, w.users.realm_operator!.id);
    assert.deepEqual(entry.data, { review_id: review.id, action: 'approve', comment: 'ship it', round: 1 });
    const cmd = await daemon.waitFor((c) => c.path === 'hug/deliver' && c.body.review_id === review.id);
    assert.deepEqual(cmd.body.message, {
      type: 'verdict',
      role: 'reviewer',
      payload: {
        action: 'approve',
        comment: 'ship it',
        actor: w.users.realm_operator!.handle,
        review_id: review.id,
        round: 1,
        run_continues: true,
      },
    });
    for (const action of ['approve', 'reject', 'request_changes', 'comment']) {
      const again = await submit(review.id, action, w.tokens.realm_admin, 'late');
      assert.equal(again.status, 409, action);
      assert.equal(again.body.code, 'conflict');
    }
    assert.equal(daemon.deliveries(review.id).length, 1);
  });

  it('two verdicts racing: exactly one wins, the other gets conflict', async () => {
    const { review } = await openReview();
    const results = await Promise.all([
      submit(review.id, 'approve', w.tokens.realm_operator),
      submit(review.id, 'reject', w.tokens.realm_admin, 'no'),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
  });

  it('comment: nothing moves, the daemon gets a comment message, get lists the submissions', async () => {
    const { runId, review } = await openReview();
    const r = await submit(review.id, 'comment', w.tokens.realm_operator, 'looks close');
    assert.equal(r.body.data.state, 'open');
    assert.equal(r.body.data.can_submit, true);
    assert.equal((await run(runId)).state, 'awaiting_input');
    const cmd = await daemon.waitFor((c) => c.path === 'hug/deliver' && c.body.review_id === review.id);
    assert.equal(cmd.body.message.type, 'comment');
    assert.equal(cmd.body.message.payload.comment, 'looks close');
    const empty = await submit(review.id, 'comment', w.tokens.realm_operator);
    assert.equal(empty.status, 400);
    await submit(review.id, 'approve', w.tokens.realm_admin);
    const got = (await h.ok('reviews/get', { id: review.id }, w.tokens.realm_operator)).data;
    assert.deepEqual(
      got.submissions.map((s: { action: string; actor: { handle: string } }) => [s.action, s.actor.handle]),
      [
        ['comment', w.users.realm_operator!.handle],
        ['approve', w.users.realm_admin!.handle],
      ],
    );
  });

  it('reject: the run fails with the comment as its error (or who rejected it)', async () => {
    const a = await openReview();
    await submit(a.review.id, 'reject', w.tokens.realm_operator, 'off topic');
    const ra = await run(a.runId);
    assert.equal(ra.state, 'failed');
    assert.equal(ra.error, 'off topic');
    assert.deepEqual(
      ra.history.slice(-2).map((e: { type: string }) => e.type),
      ['review.submitted', 'run.ended'],
    );
    const cmd = await daemon.waitFor((c) => c.path === 'hug/deliver' && c.body.review_id === a.review.id);
    assert.equal(cmd.body.message.payload.run_continues, false);

    const b = await openReview();
    await submit(b.review.id, 'reject', w.tokens.realm_operator);
    assert.equal((await run(b.runId)).error, `rejected by ${w.users.realm_operator!.handle}`);
  });

  it('request_changes: the run runs the phase again, in the next round, until the round limit fails it', async () => {
    const { runId, epoch, review } = await openReview();
    const first = await submit(review.id, 'request_changes', w.tokens.realm_operator, 'shorter');
    assert.equal(first.body.data.state, 'changes_requested');
    assert.equal((await run(runId)).state, 'running');
    const cmd = await daemon.waitFor((c) => c.path === 'hug/deliver' && c.body.review_id === review.id);
    assert.equal(cmd.body.message.payload.run_continues, true);
    // The daemon runs the phase again and asks again: round 2 (the phase allows 2).
    await h.ok(
      'runs/report',
      { run_id: runId, lease_epoch: epoch, event: 'phase.started', phase: 'draft' },
      dt(),
    );
    const second = await request(runId, epoch);
    assert.equal(second.status, 201);
    assert.equal(second.body.data.round, 2);
    await submit(second.body.data.id, 'request_changes', w.tokens.realm_operator, 'still long');
    const r = await run(runId);
    assert.equal(r.state, 'failed');
    assert.equal(r.error, 'review: changes requested 2 times, the limit');
    const last = await daemon.waitFor(
      (c) => c.path === 'hug/deliver' && c.body.review_id === second.body.data.id,
    );
    assert.equal(last.body.message.payload.run_continues, false);
  });

  it("an agent's review: any verdict sends the run back to running, the agent decides", async () => {
    const { runId, epoch } = await runningRun();
    const r = await request(runId, epoch, { kind: 'agent' });
    assert.equal(r.body.data.kind, 'agent');
    await submit(r.body.data.id, 'reject', w.tokens.realm_operator, 'no');
    assert.equal((await run(runId)).state, 'running');
  });

  it('expires when review_timeout_ms passes: the review closes as expired and the run fails', async () => {
    const { runId, review } = await openReview('hurried');
    assert.equal(review.deadline_at, review.requested_at + 1000);
    const failed = await waitForRun(h, runId, (x) => x.state === 'failed', 10_000);
    assert.equal(failed.error, 'review expired: no verdict within 1000 ms');
    assert.ok(failed.history.some((e: { type: string }) => e.type === 'review.expired'));
    const got = (await h.ok('reviews/get', { id: review.id })).data;
    assert.equal(got.state, 'expired');
    assert.deepEqual(got.verdict, { action: 'expired', comment: failed.error });
    const cmd = await daemon.waitFor((c) => c.path === 'hug/deliver' && c.body.review_id === review.id);
    assert.equal(cmd.body.message.role, 'system');
    assert.equal(cmd.body.message.payload.action, 'expired');
    assert.equal((await submit(review.id, 'approve', w.tokens.realm_operator)).status, 409);
  });

  it('a run that ends another way closes its open review as cancelled', async () => {
    // The daemon reports the run failed (as after its restart).
    const a = await openReview();
    await h.ok(
      'runs/report',
      { run_id: a.runId, lease_epoch: a.epoch, event: 'failed', error: 'restart' },
      dt(),
    );
    assert.equal((await h.ok('reviews/get', { id: a.review.id })).data.state, 'cancelled');
    // Cancelled by a user: the daemon confirms.
    const b = await openReview();
    await h.ok('runs/cancel', { run_id: b.runId }, w.tokens.realm_operator);
    assert.equal((await h.ok('reviews/get', { id: b.review.id })).data.state, 'open');
    await h.ok('runs/report', { run_id: b.runId, lease_epoch: b.epoch, event: 'cancelled' }, dt());
    assert.equal((await h.ok('reviews/get', { id: b.review.id })).data.state, 'cancelled');
    // Lost: the lease expired.
    const c = await openReview();
    await h.running.hub.db
      .updateTable('runs')
      .set({ lease_expires_at: 0 })
      .where('run_id', '=', c.runId)
      .execute();
    await waitForRun(h, c.runId, (x) => x.state === 'lost', 10_000);
    assert.equal((await h.ok('reviews/get', { id: c.review.id })).data.state, 'cancelled');
    assert.equal((await submit(c.review.id, 'approve', w.tokens.realm_operator)).status, 409);
  });

  it('lists by state (open, closed, all, one state) and by run, in pages', async () => {
    const { runId, review } = await openReview();
    const list = (body: Record<string, unknown>) =>
      h.ok('reviews/list', { realm_id: w.realmId, ...body }, w.tokens.realm_operator);
    assert.ok((await list({})).data.every((r: { state: string }) => r.state === 'open'));
    assert.ok((await list({ state: 'closed' })).data.every((r: { state: string }) => r.state !== 'open'));
    const byRun = await list({ run_id: runId, state: 'all' });
    assert.deepEqual(
      byRun.data.map((r: { id: string }) => r.id),
      [review.id],
    );
    const approved = (await list({ state: 'approved' })).data;
    assert.ok(approved.length > 0 && approved.every((r: { state: string }) => r.state === 'approved'));
    const all = (await list({ state: 'all', limit: 500 })).data.map((r: { id: string }) => r.id);
    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list({ state: 'all', limit: 3, ...(cursor ? { cursor } : {}) });
      paged.push(...page.data.map((r: { id: string }) => r.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    assert.deepEqual(paged, all);
    assert.deepEqual([...all].sort(), all, 'oldest first');
  });
});
