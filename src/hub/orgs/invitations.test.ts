import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { addOrgUser, createOrgWithOwner } from '../../../test/helpers/world.js';

type Org = Awaited<ReturnType<typeof createOrgWithOwner>>;
const PASSWORD = 'correct horse battery';

describe('who may accept an invitation', () => {
  let h: TestHub;
  let alpha: Org;
  let bravo: Org;
  let charlie: Org;
  const invite = (org: Org, email: string, role: 'admin' | 'member' = 'member') =>
    h.ok('orgs/invite_member', { org_id: org.orgId, email, role }, org.owner.token);
  const userIdOf = async (email: string) =>
    (
      await h.running.hub.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', email)
        .executeTakeFirstOrThrow()
    ).id;
  const orgIdsOf = async (token: string) =>
    (await h.ok('orgs/list', {}, token)).data.map((o: { id: string }) => o.id).sort();

  before(async () => {
    h = await startTestHub();
    alpha = await createOrgWithOwner(h, 'alpha');
    bravo = await createOrgWithOwner(h, 'bravo');
    charlie = await createOrgWithOwner(h, 'charlie');
  });
  after(() => h.close());

  it("another organization's admin cannot take over an invited account with their own invitation", async () => {
    const person = 'pat@victim.test';
    const fromAlpha = await invite(alpha, person);
    // bravo's owner invites the same address and holds the code of that invitation.
    const fromBravo = await invite(bravo, person, 'admin');
    const chosen = { code: fromBravo.data.code, password: 'the attacker chose this' };
    const anonymous = await h.call('invites/accept', chosen, null);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error.code, 'unauthorized');
    assert.match(anonymous.body.error.message, /accept that invitation first/);
    const signedIn = await h.call('invites/accept', chosen, bravo.owner.token);
    assert.equal(signedIn.status, 403);
    assert.equal(signedIn.body.error.code, 'forbidden');
    const asPerson = await h.call('auth/sign_in', { email: person, password: chosen.password }, null);
    assert.equal(asPerson.status, 401);

    // The person accepts the invitation that created the account, then the other one signed in.
    const first = await h.ok(
      'invites/accept',
      { code: fromAlpha.data.code, password: 'my own password' },
      null,
    );
    const session = await h.ok('auth/sign_in', { email: person, password: 'my own password' }, null);
    const second = await h.ok('invites/accept', { code: fromBravo.data.code }, session.data.token);
    assert.equal(second.data.user.id, first.data.user.id);
    assert.deepEqual(await orgIdsOf(session.data.token), [alpha.orgId, bravo.orgId].sort());
    const roles = await h.ok('orgs/list_members', { org_id: bravo.orgId }, bravo.owner.token);
    assert.equal(roles.data.find((m: { user: { email: string } }) => m.user.email === person).role, 'admin');
    // The password is still the person's, and bravo's code is spent.
    assert.equal(
      (await h.call('auth/sign_in', { email: person, password: 'my own password' }, null)).status,
      200,
    );
    const again = await h.call('invites/accept', chosen, null);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'conflict');
  });

  it('an account with a password accepts signed in as itself or with its password, never with the code alone', async () => {
    const sam = await addOrgUser(h, alpha.orgId, 'sam@alpha.test', 'member', alpha.owner.token);
    const fromBravo = await invite(bravo, 'sam@alpha.test');
    const noProof = await h.call('invites/accept', { code: fromBravo.data.code }, null);
    assert.equal(noProof.status, 401);
    assert.match(noProof.body.error.message, /already has an account: sign in as that account/);
    const guessed = await h.call(
      'invites/accept',
      { code: fromBravo.data.code, password: 'a guess 123' },
      null,
    );
    assert.equal(guessed.status, 401);
    assert.equal(guessed.body.error.message, 'wrong password for this account');
    const inviter = await h.call('invites/accept', { code: fromBravo.data.code }, bravo.owner.token);
    assert.equal(inviter.status, 403);
    const accepted = await h.ok('invites/accept', { code: fromBravo.data.code }, sam.token);
    assert.equal(accepted.data.user.id, sam.id);
    // With its password instead of a token.
    const fromCharlie = await invite(charlie, 'sam@alpha.test');
    const withPassword = await h.ok(
      'invites/accept',
      { code: fromCharlie.data.code, password: PASSWORD },
      null,
    );
    assert.equal(withPassword.data.user.id, sam.id);
    assert.deepEqual(await orgIdsOf(sam.token), [alpha.orgId, bravo.orgId, charlie.orgId].sort());
    assert.equal(
      (await h.call('auth/sign_in', { email: 'sam@alpha.test', password: PASSWORD }, null)).status,
      200,
    );
  });

  it("guessing an account's password through invites/accept is throttled like sign-in", async () => {
    const kim = await addOrgUser(h, alpha.orgId, 'kim@alpha.test', 'member', alpha.owner.token);
    const fromBravo = await invite(bravo, 'kim@alpha.test');
    for (let i = 0; i < 10; i++) {
      const r = await h.call('invites/accept', { code: fromBravo.data.code, password: `guess ${i}` }, null);
      assert.equal(r.status, 401, `guess ${i + 1}`);
    }
    const right = await h.call('invites/accept', { code: fromBravo.data.code, password: PASSWORD }, null);
    assert.equal(right.status, 429);
    assert.equal(right.body.code, 'rate_limited');
    const signIn = await h.call('auth/sign_in', { email: 'kim@alpha.test', password: PASSWORD }, null);
    assert.equal(signIn.status, 429);
    // A session the person already holds still accepts.
    assert.equal(
      (await h.ok('invites/accept', { code: fromBravo.data.code }, kim.token)).data.user.id,
      kim.id,
    );
  });

  it('the organization whose invitation created an account may invite it again until it has a password', async () => {
    const person = 'late@newcomer.test';
    const lost = await invite(alpha, person);
    const fromBravo = await invite(bravo, person);
    const resent = await invite(alpha, person);
    const old = await h.call('invites/accept', { code: lost.data.code, password: 'my own password' }, null);
    assert.equal(old.status, 409);
    assert.match(old.body.error, /revoked/);
    const noPassword = await h.call('invites/accept', { code: resent.data.code }, null);
    assert.equal(noPassword.status, 400);
    assert.equal(noPassword.body.details.issues[0].field, 'password');
    const accepted = await h.ok(
      'invites/accept',
      { code: resent.data.code, password: 'my own password', handle: 'late' },
      null,
    );
    assert.equal(accepted.data.user.handle, 'late');
    assert.equal(accepted.data.user.status, 'active');
    assert.equal((await h.ok('invites/accept', { code: fromBravo.data.code }, accepted.data.token)).ok, true);
  });

  it('an owner named by user_id of an account without a password accepts after its first invitation', async () => {
    const first = await invite(alpha, 'founder@delta.test');
    const created = await h.ok('orgs/new', {
      slug: 'delta',
      owner: { user_id: await userIdOf('founder@delta.test') },
    });
    const code = created.data.owner_invite.code;
    const early = await h.call('invites/accept', { code, password: 'founder password' }, null);
    assert.equal(early.status, 401);
    const acc = await h.ok('invites/accept', { code: first.data.code, password: 'founder password' }, null);
    const owner = await h.ok('invites/accept', { code }, acc.data.token);
    assert.equal(owner.data.user.id, acc.data.user.id);
    assert.equal((await h.ok('orgs/get', { id: created.data.org.id }, acc.data.token)).data.status, 'active');
  });
});
