import { z } from 'zod';
import { AppError, invalidParams, notFound } from '../../shared/errors.js';
import { refuseRealmToken, requireUser } from '../access/access.service.js';
import type { UserActor } from '../access/actor.js';
import { cursor, id, limit, name, type OpContext, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import { checkSignIn } from './throttle.js';
import { issueUserToken, userOut } from './users.js';

const DAY = 24 * 60 * 60 * 1000;

/** The earlier of two expiry times (null: never). A token never outlives the one that created it. */
export const earliest = (a: number | null, b: number | null) =>
  a === null ? b : b === null ? a : Math.min(a, b);

function tokenOut(t: {
  id: string;
  name: string;
  kind: string;
  hint: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
}) {
  return {
    id: t.id,
    name: t.name,
    kind: t.kind,
    hint: t.hint,
    created_at: t.created_at,
    expires_at: t.expires_at,
    last_used_at: t.last_used_at,
  };
}

/** The caller re-enters their password (checked as a sign-in, under the same throttle). */
async function confirmPassword(ctx: OpContext, actor: UserActor, password: string): Promise<void> {
  const user = await checkSignIn(ctx, actor.user.email, password, ctx.ip);
  if (user?.id !== actor.user.id) {
    throw invalidParams([{ field: 'password', message: 'is not the password of this account' }]);
  }
}

export const authOps = [
  op({
    name: 'auth/whoami',
    summary: 'The caller: a user (user token) or a daemon (realm token).',
    input: z.object({}),
    async handler(ctx) {
      if (!ctx.actor) throw new AppError('unauthorized', 'authentication required');
      if (ctx.actor.kind === 'daemon') {
        const d = ctx.actor.daemon;
        return { data: { user: null, daemon: { id: d.id, realm_id: d.realm_id, name: d.name } } };
      }
      return { data: { user: userOut(ctx.actor.user), daemon: null } };
    },
  }),
  op({
    name: 'auth/sign_in',
    summary: 'Exchanges e-mail and password for a session token.',
    input: z.object({ email: z.string().min(1).max(320), password: z.string().min(1).max(1000) }),
    async handler(ctx, input) {
      refuseRealmToken(ctx.actor);
      const user = await checkSignIn(ctx, input.email, input.password, ctx.ip);
      if (!user) throw new AppError('unauthorized', 'invalid e-mail or password');
      const expiresAt = ctx.now() + ctx.config.sessionTtlMs;
      const { token } = await issueUserToken(ctx, user.id, 'session', 'session', expiresAt);
      return { data: { token, expires_at: expiresAt, user: userOut(user) } };
    },
  }),
  op({
    name: 'auth/sign_out',
    summary:
      'Ends the session of the session token used for this call; a personal or admin token is left as it is (revoked: false).',
    input: z.object({}),
    async handler(ctx) {
      const actor = requireUser(ctx.actor);
      if (actor.tokenKind !== 'session') return { data: { revoked: false, kind: actor.tokenKind } };
      await ctx.db
        .updateTable('tokens')
        .set({ revoked_at: ctx.now() })
        .where('id', '=', actor.tokenId)
        .execute();
      return { data: { revoked: true, kind: actor.tokenKind } };
    },
  }),
  op({
    name: 'tokens/create',
    summary:
      'Creates a personal access token for the caller; the secret is shown once. It expires no later than the token used to create it, unless the call re-enters the password.',
    input: z.object({
      name,
      expires_in_days: z.number().int().min(1).max(3650).optional(),
      password: z.string().min(1).max(1000).optional(),
    }),
    async handler(ctx, input) {
      const actor = requireUser(ctx.actor);
      const asked = input.expires_in_days ? ctx.now() + input.expires_in_days * DAY : null;
      // A stolen session must not turn into a longer-lived credential; the password may.
      if (input.password !== undefined) await confirmPassword(ctx, actor, input.password);
      const expiresAt = input.password !== undefined ? asked : earliest(asked, actor.tokenExpiresAt);
      const { token, row } = await issueUserToken(ctx, actor.user.id, 'personal', input.name, expiresAt);
      return { data: { ...tokenOut(row), token } };
    },
  }),
  op({
    name: 'tokens/list',
    summary: "The caller's live tokens (never their secrets).",
    input: z.object({ limit, cursor }),
    async handler(ctx, input) {
      const actor = requireUser(ctx.actor);
      const q = ctx.db
        .selectFrom('tokens')
        .selectAll()
        .where('user_id', '=', actor.user.id)
        .where('revoked_at', 'is', null)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', ctx.now())]));
      const page = await keysetPage(q, input);
      return { data: page.data.map(tokenOut), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'tokens/revoke',
    summary: "Revokes one of the caller's tokens.",
    input: z.object({ id }),
    async handler(ctx, input) {
      const actor = requireUser(ctx.actor);
      const res = await ctx.db
        .updateTable('tokens')
        .set({ revoked_at: ctx.now() })
        .where('id', '=', input.id)
        .where('user_id', '=', actor.user.id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) throw notFound('token');
      return { data: { id: input.id, revoked: true } };
    },
  }),
];
