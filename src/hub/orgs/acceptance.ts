import type { InvitesTable, UsersTable } from '../../db/schema.js';
import { AppError, conflict, forbidden, invalidParams } from '../../shared/errors.js';
import { hashPassword } from '../../shared/password.js';
import type { Actor } from '../access/actor.js';
import { checkSignIn } from '../auth/throttle.js';
import type { Hub } from '../context.js';

export interface AcceptInput {
  code: string;
  password?: string | undefined;
  handle?: string | undefined;
  display_name?: string | undefined;
}

/** The caller of invites/accept: who is signed in (if anyone) and from where. */
export interface Caller {
  actor: Actor | null;
  ip: string;
}

/**
 * Who may accept an invitation (docs/security.md, "Invitations"). The code is shown to the inviter,
 * so holding it proves nothing about the invited person, except for an account that the inviting
 * organization itself created and that has no password yet: then the code sets the password. Any
 * other account is accepted by its owner: signed in as that account, or with its password (checked
 * as a sign-in, under the same throttle). Answers the update that sets the first password, or null.
 */
export async function acceptanceProof(
  hub: Hub,
  caller: Caller,
  invite: InvitesTable,
  user: UsersTable,
  input: AcceptInput,
): Promise<Partial<UsersTable> | null> {
  const signedIn = caller.actor?.kind === 'user' ? caller.actor.user : null;
  if (signedIn?.id === user.id) return null;
  if (user.password_hash === null && user.claim_org_id === invite.org_id) {
    return firstPassword(hub, user, input);
  }
  if (signedIn) {
    throw forbidden(
      `this invitation is for another account (${user.email}); sign in as that account to accept it`,
    );
  }
  if (user.password_hash === null) {
    throw new AppError(
      'unauthorized',
      `${user.email} has an account that another organization's invitation created: accept that invitation first (it sets your password), then sign in and accept this one`,
    );
  }
  if (input.password === undefined) {
    throw new AppError(
      'unauthorized',
      `${user.email} already has an account: sign in as that account (or give its password) to accept`,
    );
  }
  const owner = await checkSignIn(hub, user.email, input.password, caller.ip);
  if (owner?.id !== user.id) throw new AppError('unauthorized', 'wrong password for this account');
  return null;
}

/** The new account's password (at least 8 characters), handle and display name. */
async function firstPassword(hub: Hub, user: UsersTable, input: AcceptInput): Promise<Partial<UsersTable>> {
  const password = input.password ?? '';
  if (password.length < 8) {
    throw invalidParams([
      {
        field: 'password',
        message:
          input.password === undefined
            ? 'required: the new account needs a password'
            : 'must be at least 8 characters',
      },
    ]);
  }
  if (input.handle && input.handle !== user.handle) {
    const taken = await hub.db
      .selectFrom('users')
      .select('id')
      .where('handle', '=', input.handle)
      .executeTakeFirst();
    if (taken) throw conflict(`handle "${input.handle}" is taken`);
  }
  return {
    status: 'active',
    password_hash: await hub.passwords.run(() => hashPassword(password, hub.config.passwordCost)),
    ...(input.handle ? { handle: input.handle } : {}),
    ...(input.display_name ? { display_name: input.display_name } : {}),
  };
}
