import type { DaemonsTable, TokensTable, UsersTable } from '../../db/schema.js';

/** Who is calling: a user (personal or session token) or a daemon (realm token). */
export type Actor =
  | {
      kind: 'user';
      user: UsersTable;
      tokenId: string;
      /** `session` (auth/sign_in, invites/accept), `personal` (tokens/create) or `admin` (SVC_ADMIN_TOKEN). */
      tokenKind: TokensTable['kind'];
      /** When the token used for this call expires (null: never). */
      tokenExpiresAt: number | null;
    }
  | { kind: 'daemon'; daemon: DaemonsTable };

export type UserActor = Extract<Actor, { kind: 'user' }>;
export type DaemonActor = Extract<Actor, { kind: 'daemon' }>;

export const isSiteAdmin = (actor: Actor): boolean => actor.kind === 'user' && actor.user.is_site_admin === 1;
