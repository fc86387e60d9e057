/**
 * Which run controls the page offers, from what the API says: the caller's realm role (`realms/get`
 * → `my_role`, the same table as src/shared/permissions.ts) and the run (`state`,
 * `pending_control`, `force_terminate`). The hub decides again on every call; this only keeps the
 * page from offering what would be refused. Unit-tested in permissions.test.ts.
 */
import { explainBlocker } from './format.js';
import type { OrgRole, RealmRole, Run } from './types.js';

const RANK: Record<RealmRole, number> = { member: 0, operator: 1, admin: 2 };

export function roleAtLeast(role: RealmRole | null | undefined, needed: RealmRole): boolean {
  return role !== null && role !== undefined && RANK[role] >= RANK[needed];
}

export interface RunControl {
  /** Show the button. */
  allowed: boolean;
  /** When the role allows it but the run does not: why (shown instead of the button). */
  blocker: string | null;
}

export interface RunControls {
  cancel: RunControl;
  resume: RunControl;
  terminate: RunControl;
  /** Shown when the role allows no control at all. */
  roleNote: string | null;
}

const no = (blocker: string | null): RunControl => ({ allowed: false, blocker });
const yes: RunControl = { allowed: true, blocker: null };

export function runControls(
  run: Pick<Run, 'state' | 'pending_control' | 'force_terminate'>,
  role: RealmRole | null | undefined,
): RunControls {
  const manage = roleAtLeast(role, 'operator'); // runs.manage
  const terminate = roleAtLeast(role, 'admin'); // runs.terminate
  const ended = ['succeeded', 'failed', 'cancelled', 'terminated'].includes(run.state);
  let cancel: RunControl = no(null);
  let resume: RunControl = no(null);
  let term: RunControl = no(null);
  if (manage) {
    if (ended) cancel = no(null);
    else if (run.pending_control?.type === 'cancel')
      cancel = no('a cancel was requested; waiting for the daemon');
    else cancel = yes;
    if (['failed', 'cancelled', 'lost'].includes(run.state)) resume = yes;
  }
  if (terminate) {
    const ft = run.force_terminate;
    if (ft.eligible) term = yes;
    else if (ft.blocker && ft.blocker !== 'already_terminal')
      term = no(`Force terminate is not available: ${explainBlocker(ft.blocker)}.`);
  }
  const roleNote = manage
    ? null
    : `Your role in this realm (${role ?? 'none'}) can view this run but not cancel, resume or terminate it.`;
  return { cancel, resume, terminate: term, roleNote };
}

/** Organization owners and admins manage the organization's channels, rules, secrets and members. */
export function orgAdmin(role: OrgRole | null | undefined): boolean {
  return role === 'owner' || role === 'admin';
}

/** Who may manage something of a realm, an organization or a person (channels, rules). */
export function canManageScoped(
  x: { realm_id: string | null; org_id: string | null; user_id?: string | null },
  who: { role: RealmRole | null; orgRole: OrgRole | null; userId: string },
  realmNeeds: RealmRole,
): boolean {
  if (x.realm_id) return roleAtLeast(who.role, realmNeeds);
  if (x.org_id) return orgAdmin(who.orgRole);
  return x.user_id === who.userId;
}
