import { type RealmPermission, realmAllows } from '../shared/permissions.js';
import type { Caller } from './caller.js';
import { DaemonError } from './errors.js';

/**
 * Which caller may use which daemon route (CONTRACT.md §6), in one table. The access guard
 * (guard.ts) decides who gets in at all; this table decides what each of them may then call.
 *
 *   command  a hub command: through the tunnel, from this machine, or with a dispatch token the hub
 *            signed for its own commands. A person on another host (a realm member's `svc_tok_`, or
 *            a dispatch token issued to them) only where `user` names the permission the hub would
 *            require of them for the same thing; `user: null` means never (the body carries what
 *            only the hub may decide: a command line, a verdict, a child's result).
 *   local    the agents of this machine: loopback callers only.
 *   read     anyone the guard let in.
 */
export type RouteRule = { who: 'command'; user: RealmPermission | null } | { who: 'local' } | { who: 'read' };

const command = (user: RealmPermission | null): RouteRule => ({ who: 'command', user });
const local: RouteRule = { who: 'local' };
const read: RouteRule = { who: 'read' };

export const ROUTE_ACCESS: Readonly<Record<string, RouteRule>> = {
  // The daemon claims the offered item with its own realm token; the hub decides who may win it.
  offer_job: read,
  'runs/execute': command(null),
  'runs/cancel': command('runs.manage'),
  'runs/child_ended': command(null),
  // The hub pins the team and its manifests from the catalog; a person installs through the hub.
  'teams/install': command(null),
  'teams/uninstall': command('teams.install'),
  'teams/list': read,
  'workspaces/register': command('workspaces.manage'),
  'workspaces/unregister': command('workspaces.manage'),
  'workspaces/assign_teams': command('workspaces.manage'),
  'workspaces/list': read,
  'hug/deliver': command(null),
  'hug/request': local,
  'hug/poll_verdict': local,
  'tokens/create': local,
  // Raw bytes of an agent's artifact (src/daemon/artifacts/upload.route.ts), served beside the router.
  'artifacts/upload': local,
};

/** Null when `caller` may call the route; otherwise the FORBIDDEN error that says why. */
export function routeRefusal(rule: RouteRule, caller: Caller): DaemonError | null {
  if (rule.who === 'read') return null;
  if (caller.kind === 'local') return null;
  if (rule.who === 'local') {
    return new DaemonError('FORBIDDEN', 'only a caller on this machine (an agent) may use this route');
  }
  if (caller.kind === 'hub' || caller.kind === 'dispatch') return null;
  if (caller.kind === 'user' && rule.user !== null) {
    if (realmAllows(caller.role, rule.user)) return null;
    return new DaemonError(
      'FORBIDDEN',
      `this needs the realm permission ${rule.user}, which the caller does not hold`,
    );
  }
  return new DaemonError('FORBIDDEN', 'only the hub or a caller on this machine may send this command');
}
