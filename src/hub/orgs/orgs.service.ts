import type { Kysely } from 'kysely';
import { type DB, updateOne } from '../../db/index.js';
import type { InvitesTable, OrgsTable, UsersTable } from '../../db/schema.js';
import type { Invite, Org } from '../../shared/api/access.js';
import { conflict, notFound } from '../../shared/errors.js';
import { hashSecret, mintToken, tokenKind } from '../../shared/tokens.js';
import { freeHandle, issueUserToken, userOut } from '../auth/users.js';
import type { Hub } from '../context.js';
import { aclChanged } from '../daemons/acl.js';
import { recordEvent } from '../events/events.js';
import { ensureSystemNotifications } from '../notifications/system.js';
import { insertRealm, upsertRealmMember } from '../realms/realms.repo.js';
import { type AcceptInput, acceptanceProof, type Caller } from './acceptance.js';

export type OwnerInput = { user_id: string } | { email: string; display_name?: string | undefined };

const iso = (ms: number) => new Date(ms).toISOString();

export async function ownerStatus(db: Kysely<DB>, org: OrgsTable): Promise<'active' | 'invited'> {
  const m = await db
    .selectFrom('org_members')
    .select('role')
    .where('org_id', '=', org.id)
    .where('user_id', '=', org.owner_user_id)
    .executeTakeFirst();
  return m?.role === 'owner' ? 'active' : 'invited';
}

/** Organization as the API shows it; `isoTimes` only for the orgs/new reply (as the spec shows). */
export async function orgOut(
  db: Kysely<DB>,
  org: OrgsTable,
  opts: { isoTimes?: boolean; reactivated?: boolean } = {},
): Promise<Org> {
  const owner = await db
    .selectFrom('users')
    .select(['id', 'email'])
    .where('id', '=', org.owner_user_id)
    .executeTakeFirst();
  return {
    id: org.id,
    slug: org.slug,
    display_name: org.display_name,
    status: org.status,
    owner: { user_id: org.owner_user_id, email: owner?.email ?? '', status: await ownerStatus(db, org) },
    created_at: opts.isoTimes ? iso(org.created_at) : org.created_at,
    updated_at: opts.isoTimes ? iso(org.updated_at) : org.updated_at,
    reactivated: opts.reactivated ?? false,
  };
}

export function inviteOut(inv: InvitesTable, code?: string): Invite {
  return {
    invite_id: inv.id,
    org_id: inv.org_id,
    email: inv.email,
    role: inv.role,
    status: inv.status,
    expires_at: iso(inv.expires_at),
    email_sent: inv.email_sent === 1,
    ...(code ? { code } : {}),
  };
}

/**
 * Finds the user for an owner/invitee, creating an `invited` user for an unknown e-mail; `orgId`,
 * the inviting organization, is then the only one whose invitation may set its first password.
 */
export async function resolveInvitee(hub: Hub, owner: OwnerInput, orgId: string): Promise<UsersTable> {
  if ('user_id' in owner) {
    const u = await hub.db.selectFrom('users').selectAll().where('id', '=', owner.user_id).executeTakeFirst();
    if (!u) throw notFound('user');
    return u;
  }
  const email = owner.email.trim().toLowerCase();
  const existing = await hub.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
  if (existing) return existing;
  const user: UsersTable = {
    id: hub.newId(),
    handle: await freeHandle(hub, email),
    email,
    display_name: owner.display_name ?? email.replace(/@.*/, ''),
    status: 'invited',
    is_site_admin: 0,
    password_hash: null,
    claim_org_id: orgId,
    created_at: hub.now(),
  };
  await hub.db.insertInto('users').values(user).execute();
  return user;
}

/** Creates an invitation (replacing a pending one for the same org and user); returns the code once. */
export async function createInvite(
  hub: Hub,
  org: OrgsTable,
  user: UsersTable,
  role: InvitesTable['role'],
  invitedBy: string | null,
): Promise<{ invite: InvitesTable; code: string }> {
  await hub.db
    .updateTable('invites')
    .set({ status: 'revoked' })
    .where('org_id', '=', org.id)
    .where('user_id', '=', user.id)
    .where('status', '=', 'pending')
    .execute();
  const code = mintToken('invite');
  const now = hub.now();
  const invite: InvitesTable = {
    id: hub.newId(),
    org_id: org.id,
    user_id: user.id,
    email: user.email,
    role,
    code_hash: hashSecret(code),
    status: 'pending',
    // Sending happens in the background; email_sent says the message was handed to the mailer.
    email_sent: hub.mailer ? 1 : 0,
    invited_by: invitedBy,
    created_at: now,
    expires_at: now + hub.config.inviteTtlMs,
    accepted_at: null,
  };
  await hub.db.insertInto('invites').values(invite).execute();
  await recordEvent(hub.db, hub, {
    type: 'invite.sent',
    org_id: org.id,
    subject_id: invite.id,
    payload: { email: user.email, role },
  });
  return { invite, code };
}

/** Sends the invitation e-mail without blocking the request; records a failure on the invite. */
export function sendInviteMail(hub: Hub, org: OrgsTable, invite: InvitesTable, code: string): void {
  const mailer = hub.mailer;
  if (!mailer) return;
  void mailer
    .send({
      to: invite.email,
      subject: `You are invited to ${org.display_name} on svc`,
      text:
        `You have been invited to join ${org.display_name} as ${invite.role}.\n\n` +
        `Accept with:\n  svc invites accept ${code} --hub ${hub.config.publicUrl}\n\n` +
        `The invitation expires at ${iso(invite.expires_at)}.\n`,
    })
    .then(async (sent) => {
      if (!sent)
        await hub.db.updateTable('invites').set({ email_sent: 0 }).where('id', '=', invite.id).execute();
    })
    .catch((err) => hub.log.warn({ err }, 'could not record e-mail result'));
}

export async function createOrg(
  hub: Hub,
  input: {
    slug: string;
    owner: OwnerInput;
    display_name?: string | undefined;
    reactivate?: boolean | undefined;
  },
  adminId: string,
) {
  const existing = await hub.db
    .selectFrom('orgs')
    .selectAll()
    .where('slug', '=', input.slug)
    .executeTakeFirst();
  if (existing && existing.deleted_at === null)
    throw conflict(`an organization with slug "${input.slug}" exists`);
  if (existing && !input.reactivate) {
    throw conflict(`a deleted organization holds slug "${input.slug}"; pass reactivate: true to restore it`);
  }
  return hub.db.transaction().execute(async (trx) => {
    const t: Hub = { ...hub, db: trx };
    const now = hub.now();
    if (existing) {
      await trx
        .updateTable('orgs')
        .set({ deleted_at: null, updated_at: now })
        .where('id', '=', existing.id)
        .execute();
      const org = { ...existing, deleted_at: null, updated_at: now };
      await ensureSystemNotifications(trx, hub, org.id);
      const owner = await trx
        .selectFrom('users')
        .selectAll()
        .where('id', '=', org.owner_user_id)
        .executeTakeFirstOrThrow();
      let invite: ReturnType<typeof inviteOut>;
      let sent: { invite: InvitesTable; code: string } | null = null;
      if ((await ownerStatus(trx, org)) === 'invited') {
        sent = await createInvite(t, org, owner, 'owner', adminId);
        invite = inviteOut(sent.invite, sent.code);
      } else {
        const last = await trx
          .selectFrom('invites')
          .selectAll()
          .where('org_id', '=', org.id)
          .where('user_id', '=', owner.id)
          .orderBy('created_at', 'desc')
          .executeTakeFirstOrThrow();
        invite = inviteOut(last);
      }
      return {
        org,
        sent,
        data: { org: await orgOut(trx, org, { isoTimes: true, reactivated: true }), owner_invite: invite },
      };
    }
    const orgId = hub.newId();
    const owner = await resolveInvitee(t, input.owner, orgId);
    const org: OrgsTable = {
      id: orgId,
      slug: input.slug,
      display_name: input.display_name ?? input.slug,
      status: 'waiting_for_owner',
      owner_user_id: owner.id,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    await trx.insertInto('orgs').values(org).execute();
    await insertRealm(trx, { id: hub.newId(), org_id: org.id, name: 'default', created_at: now });
    // Before the owner's invitation, so its invite.sent already meets the system rule.
    await ensureSystemNotifications(trx, hub, org.id);
    const sent = await createInvite(t, org, owner, 'owner', adminId);
    return {
      org,
      sent,
      data: {
        org: await orgOut(trx, org, { isoTimes: true }),
        owner_invite: inviteOut(sent.invite, sent.code),
      },
    };
  });
}

export async function acceptInvite(hub: Hub, caller: Caller, input: AcceptInput) {
  if (tokenKind(input.code) !== 'invite') throw notFound('invitation');
  const invite = await hub.db
    .selectFrom('invites')
    .selectAll()
    .where('code_hash', '=', hashSecret(input.code))
    .executeTakeFirst();
  if (!invite) throw notFound('invitation');
  if (invite.status !== 'pending') throw conflict(`this invitation is ${invite.status}`);
  if (invite.expires_at <= hub.now()) throw conflict('this invitation has expired; ask for a new one');
  const org = await hub.db
    .selectFrom('orgs')
    .selectAll()
    .where('id', '=', invite.org_id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!org) throw notFound('organization');
  const user = await hub.db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', invite.user_id)
    .executeTakeFirstOrThrow();
  const update = await acceptanceProof(hub, caller, invite, user, input);

  const now = hub.now();
  const expiresAt = now + hub.config.sessionTtlMs;
  const accepted = await hub.db.transaction().execute(async (trx) => {
    // The status check in the WHERE makes acceptance single-use under concurrency.
    const taken = await updateOne(
      trx
        .updateTable('invites')
        .set({ status: 'accepted', accepted_at: now })
        .where('id', '=', invite.id)
        .where('status', '=', 'pending'),
    );
    if (!taken) throw conflict('this invitation was accepted already');
    if (update) {
      // Only while the account still has no password: two acceptances never both set one.
      const set = await updateOne(
        trx.updateTable('users').set(update).where('id', '=', user.id).where('password_hash', 'is', null),
      );
      if (!set) throw conflict("this account's password was set meanwhile; sign in and accept again");
    }
    await trx
      .insertInto('org_members')
      .values({ org_id: org.id, user_id: user.id, role: invite.role, created_at: now })
      .onConflict((oc) => oc.columns(['org_id', 'user_id']).doUpdateSet({ role: invite.role }))
      .execute();
    if (invite.role === 'owner') {
      await trx
        .updateTable('orgs')
        .set({ status: 'active', updated_at: now })
        .where('id', '=', org.id)
        .execute();
      const realm = await trx
        .selectFrom('realms')
        .select('id')
        .where('org_id', '=', org.id)
        .where('name', '=', 'default')
        .executeTakeFirst();
      if (realm) {
        await upsertRealmMember(trx, {
          realm_id: realm.id,
          member_type: 'user',
          member_id: user.id,
          role: 'admin',
          created_at: now,
        });
      }
    }
    await recordEvent(trx, hub, {
      type: 'invite.accepted',
      org_id: org.id,
      subject_id: invite.id,
      payload: { user_id: user.id, role: invite.role },
    });
    const { token } = await issueUserToken({ ...hub, db: trx }, user.id, 'session', 'invitation', expiresAt);
    const fresh = await trx
      .selectFrom('users')
      .selectAll()
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    return { token, expires_at: expiresAt, user: userOut(fresh) };
  });
  await aclChanged(hub, { orgId: org.id });
  return accepted;
}
