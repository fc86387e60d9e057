import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fakeDaemon } from '../../../test/helpers/fake-daemon.js';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../../../test/helpers/runs.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';

/**
 * Who may be named a reviewer (CONTRACT.md §3): realm members, and those who count as members of
 * every realm — the site administrator and the organization's owner and admins.
 */
describe('reviewers: the site administrator and org owners and admins count as realm members', () => {
  let h: TestHub;
  let w: World;
  let daemon: Awaited<ReturnType<typeof fakeDaemon>>;
  const agents = agentDir();
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    await registerAgent(h, w.orgId, 'noop', agents.write('noop', ''));
    await registerTeam(h, w.orgId, 'gated', [{ name: 'draft', agent: 'noop', review: true }]);
    daemon = await fakeDaemon(h.url, w.tokens.realm_token!);
  });
  after(async () => {
    await daemon?.close();
    await h?.close();
    agents.cleanup();
  });

  const newRun = (handles: string[]) =>
    h.call(
      'runs/new',
      { realm_id: w.realmId, team: 'gated', reviewers: { draft: handles } },
      w.tokens.realm_member,
    );

  it('runs/new accepts the site administrator, an org owner and an org admin as reviewers', async () => {
    for (const who of ['site_admin', 'org_owner', 'org_admin'] as const) {
      const r = await newRun([w.users[who]!.handle]);
      assert.equal(r.status, 201, `${who}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body.data.reviewers, { draft: [w.users[who]!.handle] });
    }
    assert.equal(w.users.site_admin!.handle, 'admin');
  });

  it('runs/new still refuses a person who is not a member of the realm', async () => {
    for (const who of ['org_member', 'outsider'] as const) {
      const r = await newRun([w.users.realm_member!.handle, w.users[who]!.handle]);
      assert.equal(r.status, 400, who);
      assert.equal(r.body.code, 'invalid_params');
      assert.equal(r.body.details.issues[0].field, 'reviewers.draft');
      assert.match(r.body.details.issues[0].message, /is not a member of this realm/);
    }
  });

  it('a named site administrator or org admin finds the review among theirs and decides it', async () => {
    for (const who of ['site_admin', 'org_admin'] as const) {
      const run = (await newRun([w.users[who]!.handle])).body.data;
      const offer = await daemon.waitFor(
        (c) => c.path === 'offer_job' && c.body.payload.run_id === run.run_id,
      );
      const dt = w.tokens.realm_token!;
      const claim = await h.ok(
        'queue/claim',
        { queue_item_id: offer.body.queue_item_id, daemon_id: w.daemonId },
        dt,
      );
      const epoch = claim.data.run.lease_epoch as number;
      await h.ok('runs/report', { run_id: run.run_id, lease_epoch: epoch, event: 'started' }, dt);
      const review = await h.ok(
        'reviews/request',
        { run_id: run.run_id, lease_epoch: epoch, phase: 'draft', summary: 'please look', kind: 'phase' },
        dt,
      );
      const mine = await h.ok('reviews/list', { realm_id: w.realmId, mine: true }, w.tokens[who]);
      const listed = mine.data.find((r: { id: string }) => r.id === review.data.id);
      assert.ok(listed, who);
      assert.equal(listed.can_submit, true, who);
      const verdict = await h.ok(
        'reviews/submit',
        { review_id: review.data.id, action: 'approve' },
        w.tokens[who],
      );
      assert.equal(verdict.data.state, 'approved', who);
    }
  });
});
