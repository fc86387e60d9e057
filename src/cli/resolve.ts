import type { Org, Realm } from '../shared/api/access.js';
import { ApiError, type HubClient, listAll } from './client.js';
import { usageError } from './context.js';

/**
 * Orgs, realms, users, groups and daemons may be named on the command line by id or by their
 * slug/name/handle; names are looked up through the list operations.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const looksLikeId = (ref: string) => UUID.test(ref);

const notFound = (what: string, ref: string) =>
  new ApiError('not_found', `${what} "${ref}" not found`, 404, null);

export type OrgRow = Org;

export type RealmRow = Realm;

export async function resolveOrg(client: HubClient, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const org = (await listAll<OrgRow>(client, 'orgs/list')).find((o) => o.slug === ref);
  if (!org) throw notFound('organization', ref);
  return org.id;
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
  const realm = (await listAll<RealmRow>(client, 'realms/list', { org_id: orgId })).find(
    (r) => r.name === ref,
  );
  if (!realm) throw notFound('realm', ref);
  return realm.id;
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
  if (!m) throw notFound('organization member', ref);
  return m.user.id;
}

export async function resolveGroup(client: HubClient, orgId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const g = (await listAll<{ id: string; name: string }>(client, 'groups/list', { org_id: orgId })).find(
    (x) => x.name === ref,
  );
  if (!g) throw notFound('group', ref);
  return g.id;
}

export async function resolveDaemon(client: HubClient, realmId: string, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const d = (await listAll<{ id: string; name: string }>(client, 'daemons/list', { realm_id: realmId })).find(
    (x) => x.name === ref,
  );
  if (!d) throw notFound('daemon', ref);
  return d.id;
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
