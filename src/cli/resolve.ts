import type { Org, Realm } from '../shared/api/access.js';
import { ApiError, type HubClient, listAll } from './client.js';
import { CliError, usageError } from './context.js';

/**
 * Orgs, realms, users, groups and daemons may be named on the command line by id or by their
 * slug/name/handle; names are looked up through the list operations.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const looksLikeId = (ref: string) => UUID.test(ref);

/** Edit distance (insertions, deletions, substitutions), for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** `; did you mean x, y?` for the names close to `ref` (a few typos away, or sharing a prefix), else ``. */
export function didYouMean(ref: string, names: readonly string[]): string {
  const near = [...new Set(names)]
    .map((n) => ({ n, d: distance(ref.toLowerCase(), n.toLowerCase()) }))
    .filter(
      ({ n, d }) =>
        d <= Math.max(2, Math.floor(ref.length / 3)) ||
        (ref.length >= 3 && n.toLowerCase().startsWith(ref.toLowerCase())),
    )
    .sort((x, y) => x.d - y.d || x.n.localeCompare(y.n))
    .slice(0, 3)
    .map(({ n }) => n);
  return near.length ? `; did you mean ${near.join(', ')}?` : '';
}

/** A client-side `not_found`, shaped like the hub's. */
export const notFound = (what: string, ref: string, near: readonly string[] = []) =>
  new ApiError('not_found', `${what} "${ref}" not found${didYouMean(ref, near)}`, 404, null);

/**
 * The one row named `ref` (a name is looked up through a list operation): none is `not_found` with
 * the near names, several is an `ambiguous` usage error that lists them (give an id instead).
 */
export function pickByName<T>(
  rows: readonly T[],
  ref: string,
  what: string,
  names: (row: T) => readonly string[],
  describe: (row: T) => string,
): T {
  const hits = rows.filter((r) => names(r).includes(ref));
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0) throw notFound(what, ref, rows.flatMap(names));
  throw new CliError(
    `${what} "${ref}" is ambiguous: ${hits.map(describe).join(', ')}; give its id`,
    2,
    'ambiguous',
  );
}

/** `01a208dd` for a UUID: enough to tell rows apart on screen. */
export const shortId = (id: string) => id.slice(0, 8);

export type OrgRow = Org;

export type RealmRow = Realm;

export async function resolveOrg(client: HubClient, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const orgs = await listAll<OrgRow>(client, 'orgs/list');
  return pickByName(
    orgs,
    ref,
    'organization',
    (o) => [o.slug],
    (o) => `${o.slug} (${o.id})`,
  ).id;
}

/** The org from `--org`, or the caller's only organization. */
export async function resolveOrgOption(
  client: HubClient,
  orgRef: string | undefined,
  why: string,
): Promise<string> {
  if (orgRef) return resolveOrg(client, orgRef);
  const orgs = await listAll<OrgRow>(client, 'orgs/list');
  if (orgs.length === 1) return orgs[0]!.id;
  throw usageError(`${why}: give --org (you see ${orgs.length} organizations)`);
}

export async function resolveRealm(client: HubClient, ref: string, orgRef?: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const orgId = await resolveOrgOption(client, orgRef, `to find realm "${ref}" by name`);
  const realms = await listAll<RealmRow>(client, 'realms/list', { org_id: orgId });
  return pickByName(
    realms,
    ref,
    'realm',
    (r) => [r.name],
    (r) => `${r.name} (${r.id})`,
  ).id;
}

/** A realm's organization (for looking up its members by name). */
export async function realmOrg(client: HubClient, realmId: string): Promise<string> {
  const r = await client.api.call('realms/get', { id: realmId });
  return r.data.org_id;
}

/** A member of the organization by id, handle or e-mail. */
export async function resolveUser(client: HubClient, orgId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const members = await listAll<{ user: { id: string; handle: string; email: string } }>(
    client,
    'orgs/list_members',
    { org_id: orgId },
  );
  const m = members.find((x) => x.user.handle === ref || x.user.email === ref.toLowerCase());
  if (!m)
    throw notFound(
      'organization member',
      ref,
      members.map((x) => x.user.handle),
    );
  return m.user.id;
}

export async function resolveGroup(client: HubClient, orgId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const groups = await listAll<{ id: string; name: string }>(client, 'groups/list', { org_id: orgId });
  return pickByName(
    groups,
    ref,
    'group',
    (g) => [g.name],
    (g) => `${g.name} (${g.id})`,
  ).id;
}

export async function resolveDaemon(client: HubClient, realmId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const daemons = await listAll<{ id: string; name: string }>(client, 'daemons/list', { realm_id: realmId });
  return pickByName(
    daemons,
    ref,
    'daemon',
    (d) => [d.name],
    (d) => `${d.name} (${d.id})`,
  ).id;
}

/** A realm member of any type, by id or name. */
export async function resolveMember(
  client: HubClient,
  realmId: string,
  type: string,
  ref: string,
): Promise<string> {
  if (looksLikeId(ref)) return ref;
  if (type === 'daemon') return resolveDaemon(client, realmId, ref);
  const orgId = await realmOrg(client, realmId);
  return type === 'group' ? resolveGroup(client, orgId, ref) : resolveUser(client, orgId, ref);
}

/** A workspace by id, or by name or path in a realm. */
export async function resolveWorkspace(client: HubClient, realmId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const rows = await listAll<{ id: string; name: string; path: string }>(client, 'workspaces/list', {
    realm_id: realmId,
  });
  return pickByName(
    rows,
    ref,
    'workspace',
    (w) => [w.name, w.path],
    (w) => `${w.path} (${w.id})`,
  ).id;
}

/** A run by id, or by its name (`hello-team-1`) in a realm. */
export async function resolveRun(client: HubClient, realmId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const runs = await listAll<{ run_id: string; run_name: string; state: string }>(client, 'runs/list', {
    realm_id: realmId,
  });
  return pickByName(
    runs,
    ref,
    'run',
    (r) => [r.run_name],
    (r) => `${r.run_id} (${r.state})`,
  ).run_id;
}
