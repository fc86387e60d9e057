import type { DaemonsTable, UsersTable } from '../../db/schema.js';

/** Who is calling: a user (personal or session token) or a daemon (realm token). */
export type Actor =
  | { kind: 'user'; user: UsersTable; tokenId: string; session: boolean }
  | { kind: 'daemon'; daemon: DaemonsTable };

export type UserActor = Extract<Actor, { kind: 'user' }>;
export type DaemonActor = Extract<Actor, { kind: 'daemon' }>;

export const isSiteAdmin = (actor: Actor): boolean => actor.kind === 'user' && actor.user.is_site_admin === 1;
