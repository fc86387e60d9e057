import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import {
  TeamInstallCommand,
  TeamUninstallCommand,
  WorkspaceAssignTeamsCommand,
  WorkspaceRegisterCommand,
} from '../../shared/protocol-catalog.js';
import { DaemonError } from '../errors.js';
import { HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { route } from '../router.js';
import {
  findWorkspace,
  listInstalledTeams,
  removeInstalledTeam,
  saveInstalledTeam,
  workspaceOut,
} from './catalog.repo.js';

/**
 * Installed teams and workspaces. The hub sends install, uninstall, register and assign commands;
 * local callers may also make them (a local registration is not reported to the hub) and list
 * what is here. Who else may call which route: src/daemon/route-access.ts.
 */

const invalid = (p: string, why: string) => new DaemonError('WORKSPACE_INVALID', `${p}: ${why}`, { path: p });

/**
 * A usable workspace path: absolute, an existing directory the daemon can list, read and write.
 * Answers it normalized (no `.`/`..`, no trailing slash).
 */
export async function checkWorkspacePath(p: string): Promise<string> {
  if (!path.isAbsolute(p)) throw invalid(p, 'the path must be absolute');
  const abs = path.resolve(p);
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw invalid(abs, 'no such directory');
    if (code === 'EACCES') throw invalid(abs, 'the daemon may not access it');
    throw invalid(abs, `cannot be read (${code ?? 'error'})`);
  }
  if (!st.isDirectory()) throw invalid(abs, 'not a directory');
  try {
    await access(abs, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch {
    throw invalid(abs, 'the daemon cannot read and write it');
  }
  return abs;
}

export const catalogRoutes = [
  route({
    path: 'teams/install',
    summary:
      'Hub → daemon: stores a team version with the child teams and agent manifests it needs (idempotent; a repeat overwrites).',
    input: TeamInstallCommand,
    async handler(ctx, input) {
      await saveInstalledTeam(ctx.db, input, ctx.now());
      ctx.log.info(
        { team: `${input.team_version.name}@${input.team_version.version}`, agents: input.agents.length },
        'team installed',
      );
      return {
        team_version_id: input.team_version.id,
        name: input.team_version.name,
        version: input.team_version.version,
        installed: true,
      };
    },
  }),
  route({
    path: 'teams/uninstall',
    summary: 'Hub → daemon: removes an installed team version (removed: false when it was not here).',
    input: TeamUninstallCommand,
    async handler(ctx, input) {
      return {
        team_version_id: input.team_version_id,
        removed: await removeInstalledTeam(ctx.db, input.team_version_id),
      };
    },
  }),
  route({
    path: 'teams/list',
    summary: 'The team versions installed on this daemon, with their phases, agents and child teams.',
    input: z.object({}),
    async handler(ctx) {
      return { teams: await listInstalledTeams(ctx.db) };
    },
  }),
  route({
    path: 'workspaces/register',
    summary:
      'Accepts a directory as a workspace: absolute, existing, a directory the daemon can read and write (else WORKSPACE_INVALID).',
    input: WorkspaceRegisterCommand,
    async handler(ctx, input) {
      const p = await checkWorkspacePath(input.path);
      const now = ctx.now();
      const existing = await findWorkspace(ctx.db, { path: p });
      const name = input.name ?? existing?.name ?? (path.basename(p) || p);
      if (existing) {
        await ctx.db
          .updateTable('workspaces')
          .set({ name, updated_at: now, ...(input.id ? { id: input.id } : {}) })
          .where('path', '=', p)
          .execute();
      } else {
        // A stale row with the hub's id (its path changed on the hub side) gives way.
        if (input.id) await ctx.db.deleteFrom('workspaces').where('id', '=', input.id).execute();
        await ctx.db
          .insertInto('workspaces')
          .values({
            id: input.id ?? randomUUID(),
            path: p,
            name,
            team_ids: '[]',
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      const saved = await findWorkspace(ctx.db, { path: p });
      return { ...workspaceOut(saved!), created: !existing };
    },
  }),
  route({
    path: 'workspaces/assign_teams',
    summary: "Hub → daemon: sets the team ids a workspace runs (by the hub's workspace id, or by path).",
    input: WorkspaceAssignTeamsCommand.refine(
      (b) => b.workspace_id !== undefined || b.path !== undefined,
      'give workspace_id or path',
    ),
    async handler(ctx, input) {
      const w =
        (input.workspace_id ? await findWorkspace(ctx.db, { id: input.workspace_id }) : undefined) ??
        (input.path ? await findWorkspace(ctx.db, { path: path.resolve(input.path) }) : undefined);
      if (!w) throw new DaemonError('NOT_FOUND', 'no such workspace on this daemon');
      const teamIds = [...new Set(input.team_ids)];
      await ctx.db
        .updateTable('workspaces')
        .set({ team_ids: JSON.stringify(teamIds), updated_at: ctx.now() })
        .where('id', '=', w.id)
        .execute();
      return workspaceOut((await findWorkspace(ctx.db, { id: w.id }))!);
    },
  }),
  route({
    path: 'workspaces/unregister',
    summary:
      'Removes a workspace here and tells the hub (workspaces/remove with the realm token). hub_removed is null when no hub is configured.',
    transactional: false,
    input: z
      .object({
        tx_id: z.string().min(1).optional(),
        id: z.string().min(1).max(200).optional(),
        path: z.string().min(1).max(4096).optional(),
      })
      .refine((b) => b.id !== undefined || b.path !== undefined, 'give id or path'),
    async handler(ctx, input) {
      const w = await findWorkspace(ctx.db, {
        id: input.id,
        path: input.path && path.isAbsolute(input.path) ? path.resolve(input.path) : input.path,
      });
      const p = w?.path ?? input.path;
      if (w) await ctx.db.deleteFrom('workspaces').where('id', '=', w.id).execute();
      let hubRemoved: boolean | null = null;
      let hubError: string | null = null;
      const daemonId = ctx.identity.daemonId;
      if (ctx.hub.hasCredentials && daemonId && p) {
        try {
          hubRemoved = (await ctx.hub.removeWorkspace(daemonId, p)).removed;
        } catch (err) {
          if (!(err instanceof HubRefusedError || err instanceof HubUnreachableError)) throw err;
          ctx.log.warn({ err, path: p }, 'the hub could not be told about a removed workspace');
          hubError = err.message;
        }
      }
      return { path: p ?? null, removed: w !== undefined, hub_removed: hubRemoved, hub_error: hubError };
    },
  }),
  route({
    path: 'workspaces/list',
    summary: "This daemon's workspaces.",
    input: z.object({}),
    async handler(ctx) {
      const rows = await ctx.db.selectFrom('workspaces').selectAll().orderBy('path').execute();
      return { workspaces: rows.map(workspaceOut) };
    },
  }),
];
