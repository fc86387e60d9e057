import { ApiError, type HubClient, listAll } from './client.js';
import { didYouMean, looksLikeId, resolveDaemon, resolveOrgOption, resolveRealm } from './resolve.js';

/** Catalog entries and daemons named on the command line (agents, teams, workspaces commands). */

export interface CatalogRow {
  id: string;
  org_id: string;
  name: string;
  version: string;
  description: string;
  created_at: number;
  updated_at: number;
  team_id?: string;
  agent_type?: string;
}

/** `NAME` or `NAME@VERSION`. */
export function splitRef(ref: string): { name: string; version?: string } {
  const at = ref.indexOf('@');
  return at < 0 ? { name: ref } : { name: ref.slice(0, at), version: ref.slice(at + 1) };
}

/**
 * An agent or team version given by id, or by `NAME[@VERSION]` in `--org` (the newest version
 * when none is given). Answers the record.
 */
export async function resolveCatalog(
  client: HubClient,
  kind: 'agents' | 'teams',
  ref: string,
  orgRef: string | undefined,
): Promise<CatalogRow> {
  if (looksLikeId(ref)) return (await client.call<{ data: CatalogRow }>(`${kind}/get`, { id: ref })).data;
  const orgId = await resolveOrgOption(client, orgRef, `to find ${ref} by name`);
  return resolveCatalogIn(client, kind, ref, orgId);
}

/**
 * `NAME[@VERSION]` in an organization. The hub's `not_found` is kept (code, and the reply printed
 * with `--json`) with a message that names what exists nearby: the near names, or the versions.
 */
export async function resolveCatalogIn(
  client: HubClient,
  kind: 'agents' | 'teams',
  ref: string,
  orgId: string,
): Promise<CatalogRow> {
  const { name, version } = splitRef(ref);
  try {
    return (
      await client.call<{ data: CatalogRow }>(`${kind}/get`, {
        org_id: orgId,
        name,
        ...(version ? { version } : {}),
      })
    ).data;
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 'not_found') throw err;
    const what = kind === 'teams' ? 'team' : 'agent';
    const rows = await listAll<CatalogRow>(client, `${kind}/list`, { org_id: orgId }).catch(() => null);
    if (!rows) throw err;
    const versions = rows.filter((r) => r.name === name).map((r) => r.version);
    const message = versions.length
      ? `${what} ${name} has no version ${version}; versions: ${versions.reverse().join(', ')}`
      : `${what} "${name}" not found${didYouMean(
          name,
          rows.map((r) => r.name),
        )}`;
    throw new ApiError(err.code, message, err.status, err.details, err.reply);
  }
}

/** A daemon by id, or by name in `--realm` (default: the `default` realm of `--org`). */
export async function resolveDaemonRef(
  client: HubClient,
  ref: string,
  opts: { realm?: string; org?: string },
): Promise<string> {
  if (looksLikeId(ref)) return ref;
  return resolveDaemon(client, await resolveRealm(client, opts.realm ?? 'default', opts.org), ref);
}
