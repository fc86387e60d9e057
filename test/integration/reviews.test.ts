import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, freePort, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Reviews end to end: a real hub, a real daemon and agent processes. An agent that asks for a
 * review itself (hug/request) and polls poll_verdict; `review: true` phases approved, sent back,
 * rejected, commented, expired and cancelled; verdicts sent while the daemon is down; no verdict
 * delivered twice across hub and daemon restarts; the CLI.
 */

// biome-ignore lint/suspicious/noExplicitAny: replies are inspected freely
type Any = any;

describe('reviews end to end (hub + daemon + agents)', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  const op = () => w.tokens.realm_operator!;
  const start = async () => {
    const x = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(x);
    return x;
  };

  before(async () => {
    // A fixed port, so the daemon finds the hub again after a restart.
    h = await startTestHub({ port: await freePort(), config: { runSweepMs: 100 } });
    w = await buildWorld(h);
    d = await start();
    // Writes a draft; a second round mentions what the reviewer asked for.
    const writer = agents.write(
      'writer',
      `const inputs = JSON.parse(process.env.SVC_INPUTS);
const review = process.env.SVC_REVIEW ? JSON.parse(process.env.SVC_REVIEW) : null;
const note = review ? ' (round ' + (review.round + 1) + ', ' + review.comment + ')' : '';
console.log('drafting' + note);
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ summary: 'A draft about ' + inputs.topic + note }));`,
    );
    const publisher = agents.write(
      'publisher',
      `const earlier = JSON.parse(process.env.SVC_PHASE_OUTPUTS);
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ published: earlier.draft.summary }));`,
    );
    // Asks its daemon for a review, polls for the verdict and exits by it (0 only when approved).
    const asker = agents.write(
      'asker',
      `const post = async (p, body) => {
  const r = await fetch(process.env.SVC_DAEMON_URL + '/v1/' + p, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return r.json();
};
(async () => {
  const req = await post('hug/request', { run_id: process.env.SVC_RUN_ID, phase: process.env.SVC_PHASE, summary: 'May I deploy?' });
  if (!req.ok) { console.error('request refused: ' + JSON.stringify(req)); process.exit(3); }
  console.log('asked for review ' + req.data.review_id);
  for (;;) {
    const r = await post('hug/poll_verdict', { review_id: req.data.review_id });
    for (const e of r.data.entries) {
      if (e.type === 'comment') { console.log('comment: ' + e.payload.comment); continue; }
      console.log('verdict: ' + e.payload.action);
      require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ entry: e }));
      process.exit(e.payload.action === 'approve' ? 0 : 1);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
})();`,
    );
    await registerAgent(h, w.orgId, 'writer', writer);
    await registerAgent(h, w.orgId, 'publisher', publisher);
    await registerAgent(h, w.orgId, 'asker', asker);
    // Logs 50 lines and gives its reviewer a summary of its own beside its outputs.
    const explainer = agents.write(
      'explainer',
      `for (let i = 1; i <= 50; i++) console.log('step ' + i);
console.error('one warning');
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({
  review_summary: 'Changed 3 files; please check the migration', files: ['a.ts', 'b.ts', 'c.ts'],
}));`,
    );
    await registerAgent(h, w.orgId, 'explainer', explainer);
    await registerTeam(h, w.orgId, 'explained', [{ name: 'change', agent: 'explainer', review: true }]);
    await registerTeam(h, w.orgId, 'reviewed', [
      { name: 'draft', agent: 'writer', review: true, review_max_rounds: 2 },
      { name: 'publish', agent: 'publisher' },
    ]);
    await registerTeam(h, w.orgId, 'timed', [
      { name: 'draft', agent: 'writer', review: true, review_timeout_ms: 1000 },
    ]);
    await registerTeam(h, w.orgId, 'asking', [{ name: 'ask', agent: 'asker' }]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  const newRun = async (team: string, extra: Record<string, unknown> = {}) =>
    (
      await h.ok(
        'runs/new',
        { realm_id: w.realmId, team, inputs: { topic: 'otters' }, ...extra },
        w.tokens.realm_member,
      )
    ).data.run_id as string;

  /** Polls reviews/list until the run has an open review of `round` (no event reaches a client). */
  async function openReviewOf(runId: string, round = 1): Promise<Any> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const list = await h.ok('reviews/list', { realm_id: w.realmId, run_id: runId }, op());
      const hit = list.data.find((r: Any) => r.round === round);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`run ${runId} has no open review of round ${round}`);
  }
  const submit = (reviewId: string, action: string, comment?: string) =>
    h.ok('reviews/submit', { review_id: reviewId, action, ...(comment ? { comment } : {}) }, op());
  async function logsOf(runId: string): Promise<string[]> {
    return (await h.ok('runs/logs', { run_id: runId })).data.map((l: { text: string }) => l.text);
  }
  async function waitForLog(runId: string, text: string) {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if ((await logsOf(runId)).some((t) => t.includes(text))) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`run ${runId} never logged "${text}": ${JSON.stringify(await logsOf(runId))}`);
  }

  it('an agent asks its daemon for a review, polls poll_verdict, and exits by the verdict', async () => {
    const runId = await newRun('asking');
    const review = await openReviewOf(runId);
    assert.equal(review.kind, 'agent');
    assert.equal(review.phase, 'ask');
    assert.equal(review.summary, 'May I deploy?');
    assert.equal((await h.ok('runs/get_by_id', { run_id: runId })).data.state, 'awaiting_input');
    await submit(review.id, 'comment', 'checking the numbers');
    await waitForLog(runId, 'comment: checking the numbers');
    await submit(review.id, 'approve', 'go');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    const entry = done.outputs.ask.entry;
    assert.deepEqual(Object.keys(entry).sort(), ['created_at', 'payload', 'role', 'type']);
    assert.equal(entry.type, 'verdict');
    assert.equal(entry.role, 'reviewer');
    assert.equal(entry.payload.action, 'approve');
    assert.equal(entry.payload.comment, 'go');
    assert.equal(typeof entry.created_at, 'number');
    const types = done.history.map((e: { type: string }) => e.type);
    assert.deepEqual(
      types.filter((t: string) => t.startsWith('review.')),
      ['review.requested', 'review.submitted', 'review.submitted'],
    );

    // Rejected: the agent decides (here it fails).
    const second = await newRun('asking');
    await submit((await openReviewOf(second)).id, 'reject', 'not today');
    const failed = await waitForRun(h, second, ended);
    assert.equal(failed.state, 'failed');
    assert.match(failed.error, /exited with code 1/);
  });

  it("a review: true phase's review holds the agent's review_summary, the outputs and the log's last lines", async () => {
    const runId = await newRun('explained');
    const listed = await openReviewOf(runId);
    const got = (await h.ok('reviews/get', { id: listed.id }, op())).data;
    for (const r of [listed, got]) {
      assert.equal(r.summary, 'Changed 3 files; please check the migration');
      assert.deepEqual(r.outputs, {
        review_summary: 'Changed 3 files; please check the migration',
        files: ['a.ts', 'b.ts', 'c.ts'],
      });
      const lines = r.log_excerpt.split('\n');
      assert.equal(lines.length, 40, r.log_excerpt);
      assert.ok(lines.includes('step 50') && lines.includes('one warning'), r.log_excerpt);
      assert.ok(!lines.includes('step 1'), 'only the last lines are kept');
    }
    await submit(listed.id, 'approve');
    assert.equal((await waitForRun(h, runId, ended)).state, 'succeeded');
    // An agent's own request carries only its summary.
    const asked = await newRun('asking');
    const own = await openReviewOf(asked);
    assert.equal(own.outputs, null);
    assert.equal(own.log_excerpt, null);
    await submit(own.id, 'approve');
    await waitForRun(h, asked, ended);
  });

  it('a review: true phase waits for approval, then the next phase runs', async () => {
    const runId = await newRun('reviewed');
    const review = await openReviewOf(runId);
    assert.equal(review.kind, 'phase');
    assert.equal(review.summary, 'A draft about otters');
    await submit(review.id, 'comment', 'reading it now');
    await waitForLog(runId, `review comment by ${w.users.realm_operator!.handle}: reading it now`);
    await submit(review.id, 'approve');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    assert.equal(done.outputs.publish.published, 'A draft about otters');
  });

  it('a verdict queued by another process of the machine does not decide a review phase', async () => {
    const runId = await newRun('reviewed');
    const review = await openReviewOf(runId);
    // An agent (a local caller) forges an approval for the run's own review.
    const forged = await d.dispatch('hug/deliver', {
      review_id: review.id,
      message: {
        type: 'verdict',
        role: 'reviewer',
        payload: {
          action: 'approve',
          comment: null,
          actor: 'me',
          review_id: review.id,
          round: 1,
          run_continues: true,
        },
      },
    });
    assert.equal(forged.reply.ok, true);
    await waitForLog(runId, 'ignored a review verdict that did not come from the hub');
    assert.equal((await h.ok('runs/get_by_id', { run_id: runId })).data.state, 'awaiting_input');
    await submit(review.id, 'approve');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
  });

  it('request_changes runs the phase again with the comment in its inputs, in the next round', async () => {
    const runId = await newRun('reviewed');
    await submit((await openReviewOf(runId, 1)).id, 'request_changes', 'mention seals');
    const second = await openReviewOf(runId, 2);
    assert.equal(second.summary, 'A draft about otters (round 2, mention seals)');
    await submit(second.id, 'approve');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    assert.equal(done.outputs.publish.published, 'A draft about otters (round 2, mention seals)');
    assert.equal(
      done.history.filter((e: Any) => e.type === 'phase.started' && e.phase === 'draft').length,
      2,
    );
  });

  it('request_changes past the round limit fails the run; the daemon reports nothing more', async () => {
    const runId = await newRun('reviewed');
    await submit((await openReviewOf(runId, 1)).id, 'request_changes', 'no');
    await submit((await openReviewOf(runId, 2)).id, 'request_changes', 'still no');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'failed');
    assert.equal(done.error, 'review: changes requested 2 times, the limit');
    await d.runner.settled(runId);
    const last = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data.history.at(-1);
    assert.equal(last.type, 'run.ended');
    assert.equal(last.actor.type, 'user');
  });

  it('reject fails the run with the comment; the daemon stops waiting without reporting', async () => {
    const runId = await newRun('reviewed');
    await submit((await openReviewOf(runId)).id, 'reject', 'not good');
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'failed');
    assert.equal(done.error, 'not good');
    await d.runner.settled(runId);
    assert.ok(!d.runner.active().includes(runId));
    const history = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data.history;
    assert.equal(history.filter((e: Any) => e.type === 'run.ended').length, 1);
    assert.ok(!history.some((e: Any) => e.type === 'phase.completed'));
  });

  it('a review past review_timeout_ms expires and fails the run; the daemon stops waiting', async () => {
    const runId = await newRun('timed');
    const review = await openReviewOf(runId);
    assert.equal(review.deadline_at - review.requested_at, 1000);
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'failed');
    assert.equal(done.error, 'review expired: no verdict within 1000 ms');
    await d.runner.settled(runId);
    assert.equal((await h.ok('reviews/get', { id: review.id })).data.state, 'expired');
  });

  it('cancelling a run that waits for a review ends the wait and closes the review', async () => {
    const runId = await newRun('reviewed');
    const review = await openReviewOf(runId);
    await h.ok('runs/cancel', { run_id: runId }, op());
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'cancelled');
    assert.equal((await h.ok('reviews/get', { id: review.id })).data.state, 'cancelled');
  });

  /** Stops the daemon and waits until the hub has seen it go. */
  async function stopDaemon() {
    await d.close();
    const deadline = Date.now() + 10_000;
    while ((await h.ok('daemons/get', { id: w.daemonId })).data.status !== 'offline') {
      assert.ok(Date.now() < deadline, 'the hub never saw the daemon go');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('a run waiting for a review phase waits again after a daemon restart; the phase does not run twice', async () => {
    const hub = () => h.running.hub;
    // The verdict arrives through the outbox after the restart.
    const first = await newRun('reviewed');
    const r1 = await openReviewOf(first);
    await waitForLog(first, `waiting for a review of phase draft (review ${r1.id}`);
    await stopDaemon();
    await submit(r1.id, 'approve', 'while you were out');
    d = await start();
    const done1 = await waitForRun(h, first, ended);
    assert.equal(done1.state, 'succeeded', JSON.stringify(done1));
    assert.equal(done1.outputs.publish.published, 'A draft about otters');
    let logs = await logsOf(first);
    assert.equal(logs.filter((t) => t.startsWith('drafting')).length, 1, JSON.stringify(logs));
    assert.ok(logs.some((t) => t.includes(`waiting again for review ${r1.id}`)));

    // The verdict was read before the stop (here: its command is gone from the outbox): the runner
    // finds it in the run's history.
    const second = await newRun('reviewed');
    const r2 = await openReviewOf(second);
    await stopDaemon();
    await submit(r2.id, 'approve', 'read before the restart');
    await hub()
      .db.deleteFrom('command_outbox')
      .where('path', '=', 'hug/deliver')
      .where('daemon_id', '=', w.daemonId)
      .where('status', '=', 'pending')
      .execute();
    d = await start();
    const done2 = await waitForRun(h, second, ended);
    assert.equal(done2.state, 'succeeded', JSON.stringify(done2));
    logs = await logsOf(second);
    assert.equal(logs.filter((t) => t.startsWith('drafting')).length, 1, JSON.stringify(logs));
    assert.ok(
      logs.some((t) => t.includes("read from the run's history")),
      JSON.stringify(logs),
    );
  });

  it('delivers a verdict sent while the daemon is down once, also across hub and daemon restarts', async () => {
    const hub = () => h.running.hub;
    // An agent's own review: the queue is read by the agent, not the runner.
    const runId = await newRun('asking');
    const review = await openReviewOf(runId);
    await stopDaemon();
    await submit(review.id, 'approve', 'while you were out');
    const row = await hub()
      .db.selectFrom('command_outbox')
      .selectAll()
      .where('path', '=', 'hug/deliver')
      .where('daemon_id', '=', w.daemonId)
      .orderBy('seq', 'desc')
      .executeTakeFirstOrThrow();
    assert.equal(JSON.parse(row.body).review_id, review.id);
    assert.equal(row.status, 'pending');

    d = await start();
    assert.equal((await hub().tunnel.waitForAck(row.tx_id)).status, 'ok');
    const poll = async () =>
      ((await d.dispatch('hug/poll_verdict', { review_id: review.id })).reply as Any).data.entries;
    const entries = await poll();
    assert.equal(entries.length, 1);
    assert.equal(entries[0].type, 'verdict');
    assert.equal(entries[0].payload.action, 'approve');
    assert.equal(entries[0].payload.comment, 'while you were out');

    // As if the ack had been lost: the command is pending again and goes out again.
    const again = () =>
      hub()
        .db.updateTable('command_outbox')
        .set({ status: 'pending', ack_status: null, reply: null, acked_at: null, last_sent_at: null })
        .where('tx_id', '=', row.tx_id)
        .execute();
    // After a hub restart: redelivered, answered from the daemon's tx_id store, nothing queued twice.
    await again();
    const replayed = once(d.link!, 'command-acked');
    await h.restart();
    assert.equal((await hub().tunnel.waitForAck(row.tx_id)).status, 'ok');
    const [ack] = await replayed;
    assert.deepEqual([ack.tx_id, ack.replayed], [row.tx_id, true]);
    assert.deepEqual(await poll(), []);
    // After a daemon restart: the same (the tx_id store is durable).
    await d.close();
    await again();
    d = await start();
    assert.equal((await hub().tunnel.waitForAck(row.tx_id)).status, 'ok');
    assert.deepEqual(await poll(), []);
  });

  it('svc reviews list, show, approve | reject | request-changes | comment', async () => {
    const env = { SVC_HUB_URL: h.url, SVC_TOKEN: op(), SVC_HOME: home.dir };
    const runId = await newRun('reviewed');
    const review = await openReviewOf(runId);
    const list = await runCli(['reviews', 'list', '--realm', w.realmId], { env });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+RUN\s+PHASE\s+ROUND\s+STATE\s+REVIEWERS\s+REQUESTED\s+DEADLINE\s+YOURS/);
    assert.ok(list.stdout.includes(review.id));
    const json = await runCli(['--json', 'reviews', 'list', '--realm', w.realmId, '--run', runId], { env });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(
      JSON.parse(json.stdout).data.map((r: Any) => r.id),
      [review.id],
    );
    const comment = await runCli(['reviews', 'comment', review.id, '-m', 'nice'], { env });
    assert.equal(comment.code, 0, comment.stderr);
    assert.match(comment.stdout, /commented \(open\)/);
    const noMessage = await runCli(['reviews', 'comment', review.id], { env });
    assert.equal(noMessage.code, 2);
    const changes = await runCli(['reviews', 'request-changes', review.id, '-m', 'more seals'], { env });
    assert.equal(changes.code, 0, changes.stderr);
    const next = await openReviewOf(runId, 2);
    const show = await runCli(['reviews', 'show', review.id], { env });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /state:\s+changes_requested/);
    assert.match(show.stdout, /comment by .*: nice/);
    assert.match(show.stdout, /request_changes by .*: more seals/);
    const closed = await runCli(['reviews', 'approve', review.id], { env });
    assert.equal(closed.code, 1);
    assert.match(closed.stderr, /already changes_requested/);
    const reject = await runCli(['reviews', 'reject', next.id, '-m', 'enough'], { env });
    assert.equal(reject.code, 0, reject.stderr);
    assert.match(reject.stdout, /rejected \(rejected\)/);
    assert.equal((await waitForRun(h, runId, ended)).error, 'enough');
    const approveJson = await runCli(['--json', 'reviews', 'approve', next.id], { env });
    assert.equal(approveJson.code, 1);
  });
});
