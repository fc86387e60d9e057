import { type Kysely, sql } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunsTable, TeamInstallsTable, TeamVersionsTable } from '../../db/schema.js';
import type { TeamInstall } from '../../shared/api/daemons.js';
import type { AgentBundle, TeamInstallCommand, TeamVersionBundle } from '../../shared/protocol-catalog.js';
import type { Hub } from '../context.js';
import type { PinnedDefinition } from './manifest.js';

/**
 * Team installations on daemons. The hub asks a daemon to install a team version with a
 * `teams/install` command; the row's `status` changes only when the daemon acks the command
 * (`settleInstalls`), so `installed` always means "the daemon confirmed it has it".
 */

/**
 * The install command body: the team version, its child team versions and every agent they need.
 * Every row is loaded within the team's organization: an id pinned in a definition never reaches
 * another organization's team or agent (manifest and `env` included).
 */
export async function buildInstallBundle(hub: Hub, root: TeamVersionsTable): Promise<TeamInstallCommand> {
  const teams = new Map<string, TeamVersionBundle>();
  const agentIds = new Set<string>();
  const toBundle = (tv: TeamVersionsTable): TeamVersionBundle => ({
    id: tv.id,
    team_id: tv.team_id,
    name: tv.name,
    version: tv.version,
    definition: JSON.parse(tv.definition) as PinnedDefinition,
  });
  const walk = async (tv: TeamVersionBundle): Promise<void> => {
    for (const p of tv.definition.phases) {
      if (p.agent_id) agentIds.add(p.agent_id);
      if (p.team_version_id && p.team_version_id !== root.id && !teams.has(p.team_version_id)) {
        const child = await hub.db
          .selectFrom('team_versions')
          .selectAll()
          .where('id', '=', p.team_version_id)
          .where('org_id', '=', root.org_id)
          .executeTakeFirst();
        if (!child) continue; // refused at removal while called, so only a concurrent removal gets here
        const b = toBundle(child);
        teams.set(child.id, b);
        await walk(b);
      }
    }
  };
  const team_version = toBundle(root);
  await walk(team_version);
  const agents: AgentBundle[] = [];
  const ids = [...agentIds];
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await hub.db
      .selectFrom('agents')
      .selectAll()
      .where('id', 'in', ids.slice(i, i + 500))
      .where('org_id', '=', root.org_id)
      .execute();
    for (const a of rows) {
      agents.push({
        id: a.id,
        name: a.name,
        version: a.version,
        agent_type: a.agent_type,
        manifest: JSON.parse(a.manifest) as Record<string, unknown>,
      });
    }
  }
  return { team_version, teams: [...teams.values()], agents };
}

/**
 * Applies the acks of pending install/uninstall commands to their rows (idempotent, safe in any
 * hub process: a row changes only while it still waits for that very tx_id).
 */
export async function settleInstalls(hub: Hub, filter: { daemonId?: string; realmId?: string } = {}) {
  const rows = await hub.db
    .selectFrom('team_installs as ti')
    .innerJoin('command_outbox as c', 'c.tx_id', 'ti.pending_tx_id')
    .select(['ti.id', 'ti.pending_action', 'c.tx_id', 'c.ack_status', 'c.error', 'c.acked_at'])
    .where('c.status', '=', 'acked')
    .$if(filter.daemonId !== undefined, (q) => q.where('ti.daemon_id', '=', filter.daemonId!))
    .$if(filter.realmId !== undefined, (q) => q.where('ti.realm_id', '=', filter.realmId!))
    .execute();
  for (const r of rows) {
    const at = r.acked_at ?? hub.now();
    const ok = r.ack_status === 'ok';
    const installing = r.pending_action === 'install';
    await hub.db
      .updateTable('team_installs')
      .set({
        pending_action: null,
        pending_tx_id: null,
        updated_at: at,
        last_error: ok ? null : r.error,
        ...(ok && installing ? { status: 'installed' as const, installed_at: at } : {}),
        ...(ok && !installing ? { status: 'uninstalled' as const, uninstalled_at: at } : {}),
      })
      .where('id', '=', r.id)
      .where('pending_tx_id', '=', r.tx_id)
      .execute();
  }
}

export function installOut(r: TeamInstallsTable): TeamInstall {
  return {
    id: r.id,
    daemon_id: r.daemon_id,
    realm_id: r.realm_id,
    team_id: r.team_id,
    team_version_id: r.team_version_id,
    status: r.status,
    pending: r.pending_action,
    tx_id: r.pending_tx_id,
    error: r.last_error === null ? null : (JSON.parse(r.last_error) as { code: string; message: string }),
    installed_at: r.installed_at,
    uninstalled_at: r.uninstalled_at,
    updated_at: r.updated_at,
  };
}

export interface DaemonWithTeam {
  daemon_id: string;
  team_id: string;
  team_version_id: string;
  /** The daemon's tunnel status as the hub last saw it. */
  daemon_status: 'online' | 'offline';
}

/**
 * The daemons of a realm (not removed) on which the team is installed, as confirmed by their
 * acks: by team version, or by team (any of its versions). The runs engine asks
 * `daemonsThatMayRun` instead (one query, no settling).
 */
export async function daemonsWithTeam(
  hub: Hub,
  realmId: string,
  team: { teamVersionId: string } | { teamId: string },
): Promise<DaemonWithTeam[]> {
  await settleInstalls(hub, { realmId });
  return hub.db
    .selectFrom('team_installs as ti')
    .innerJoin('daemons as d', 'd.id', 'ti.daemon_id')
    .select(['ti.daemon_id', 'ti.team_id', 'ti.team_version_id', 'd.status as daemon_status'])
    .where('ti.realm_id', '=', realmId)
    .where('d.realm_id', '=', realmId)
    .where('d.revoked_at', 'is', null)
    .where('ti.status', '=', 'installed')
    .$if('teamVersionId' in team, (q) =>
      q.where('ti.team_version_id', '=', (team as { teamVersionId: string }).teamVersionId),
    )
    .$if('teamId' in team, (q) => q.where('ti.team_id', '=', (team as { teamId: string }).teamId))
    .orderBy('ti.daemon_id')
    .orderBy('ti.team_version_id')
    .execute();
}

/** What a run needs installed: its team version (a child run: its root's, whose bundle holds it), or its agent. */
export interface RunNeeds {
  realm_id: string;
  team_version_id: string | null;
  agent_id: string | null;
  root_run_id?: string | null;
}

export interface InstalledFor {
  daemon_id: string;
  /** The installed team that lets the daemon run it (the agent's team for a single-agent run). */
  team_id: string;
}

/**
 * The daemons of the run's realm (not removed) that may run it, in one indexed query: the team
 * version is installed on them (confirmed by their ack), or for a single-agent run a team version
 * whose phases use the agent. `online` keeps the online ones, `daemonIds` those listed.
 */
export async function daemonsThatMayRun(
  db: Kysely<DB>,
  run: RunNeeds,
  only: { online?: boolean; daemonIds?: string[] } = {},
): Promise<InstalledFor[]> {
  return (await mayRunQuery(db, run, only)?.execute()) ?? [];
}

/**
 * The query of `daemonsThatMayRun`, to run with others (src/db/together.ts); null when none may.
 * `countHeldIn`: each row also counts the runs its daemon holds in these states (`held`).
 */
export function mayRunQuery(
  db: Kysely<DB>,
  run: RunNeeds,
  only: { online?: boolean; daemonIds?: string[]; countHeldIn?: readonly RunsTable['state'][] } = {},
) {
  if (!run.team_version_id && !run.agent_id) return null;
  if (only.daemonIds?.length === 0) return null;
  const rootRunId = run.root_run_id;
  const agentId = run.agent_id;
  // The states are constants of the statement, not parameters: PostgreSQL plans it once as a
  // prepared statement (a generic plan as good as one made per call; see queue.repo.ts).
  return db
    .selectFrom('team_installs as ti')
    .innerJoin('daemons as d', 'd.id', 'ti.daemon_id')
    .select(['ti.daemon_id', 'ti.team_id'])
    .distinct()
    .where('ti.realm_id', '=', run.realm_id)
    .where('ti.status', '=', sql.lit('installed'))
    .where('d.realm_id', '=', run.realm_id)
    .where('d.revoked_at', 'is', null)
    .$if(only.online === true, (q) => q.where('d.status', '=', sql.lit('online')))
    .$if(only.daemonIds !== undefined, (q) => q.where('ti.daemon_id', 'in', only.daemonIds!))
    .$if(run.team_version_id !== null, (q) =>
      q.where((eb) =>
        rootRunId
          ? eb.or([
              eb('ti.team_version_id', '=', run.team_version_id!),
              eb(
                'ti.team_version_id',
                '=',
                eb.selectFrom('runs').select('team_version_id').where('run_id', '=', rootRunId),
              ),
            ])
          : eb('ti.team_version_id', '=', run.team_version_id!),
      ),
    )
    .$if(run.team_version_id === null && agentId !== null, (q) =>
      q
        .innerJoin('team_versions as tv', 'tv.id', 'ti.team_version_id')
        // `"agent_id":"<id>"` in the pinned definition's JSON (ids need no escaping), the id bound as
        // a parameter so that the query keeps one text whatever the agent (dispatch.service.ts).
        .where('tv.definition', 'like', sql<string>`'%"agent_id":"' || cast(${agentId} as text) || '"%'`),
    )
    .$if(only.countHeldIn !== undefined, (q) =>
      q.select((eb) =>
        eb
          .selectFrom('runs as h')
          .select(eb.fn.countAll<number | string>().as('n'))
          .whereRef('h.daemon_id', '=', 'ti.daemon_id')
          .where(
            'h.state',
            'in',
            only.countHeldIn!.map((state) => sql.lit(state)),
          )
          .as('held'),
      ),
    )
    .orderBy('ti.daemon_id');
}

/**
 * An ack of a pending install: settles it and answers its realm, so that runs waiting for the team
 * can be dispatched. Undefined for any other command.
 */
export async function settleInstallAck(
  hub: Hub,
  txId: string,
): Promise<{ realm_id: string; team_version_id: string } | undefined> {
  const row = await hub.db
    .selectFrom('team_installs')
    .select(['daemon_id', 'realm_id', 'team_version_id', 'pending_action'])
    .where('pending_tx_id', '=', txId)
    .executeTakeFirst();
  if (row?.pending_action !== 'install') return undefined;
  await settleInstalls(hub, { daemonId: row.daemon_id });
  return row;
}
