import path from 'node:path';
import { z } from 'zod';
import type { WorkspacesTable } from '../../db/schema.js';
import { AppError, conflict, forbidden, notFound } from '../../shared/errors.js';
import { requireRealm, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import { settleInstalls } from '../catalog/installs.service.js';
import type { Hub } from '../context.js';
import { awaitCommand, daemonReachable, withdrawCommand } from '../daemons/await-command.js';
import { inTx, sendCommand } from '../daemons/commands.js';
import { loadLiveDaemon, realmOfScope } from '../daemons/daemons.repo.js';
import { cursor, id, limit, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import {
  findByPath,
  loadWorkspace,
  recordAccepted,
  registerPending,
  requireReadyWorkspace,
  settleWorkspaces,
} from './workspaces.repo.js';
import { acceptedPath, normalizeWorkspacePath, workspaceOut } from './workspaces.service.js';

const wsPath = z.string().min(1, 'must not be empty').max(4096);

/** Realm admin of the owning realm, or the realm token of the workspace's own daemon. */
async function requireWorkspaceAdmin(
  hub: Hub,
  actor: Actor | null,
  daemon: { id: string; realm_id: string },
) {
  if (actor?.kind === 'daemon') {
    if (actor.daemon.id !== daemon.id) throw forbidden("only the workspace's own daemon may remove it");
    return;
  }
  await requireRealm(hub, actor, daemon.realm_id, 'workspaces.manage');
}

export const workspaceOps = [
  op({
    name: 'workspaces/register',
    summary:
      'Registers a directory of a daemon as a workspace. The daemon checks the path (absolute, an existing directory it can read and write). An offline daemon checks it when it connects: the workspace is `pending` (202) until then, then `ready` or `failed` with the daemon’s `error`.',
    input: z.object({ daemon_id: id, path: wsPath, name: z.string().trim().min(1).max(200).optional() }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const daemon = await loadLiveDaemon(ctx, input.daemon_id);
      await requireRealm(ctx, user, daemon.realm_id, 'workspaces.manage');
      const wanted = normalizeWorkspacePath(input.path);
      const existing = await findByPath(ctx, daemon.id, wanted);
      const name = input.name ?? existing?.name ?? (path.posix.basename(wanted) || wanted);
      const workspaceId = existing?.id ?? ctx.newId();
      if (!(await daemonReachable(ctx, daemon.id))) {
        const w = { id: workspaceId, path: wanted, requestedPath: input.path, name, existing };
        ctx.status(202);
        return { data: workspaceOut(await registerPending(ctx, daemon, w)) };
      }
      const txId = await sendCommand(ctx, daemon.id, 'workspaces/register', {
        id: workspaceId,
        path: input.path,
        name,
      });
      const result = await awaitCommand(ctx, daemon.id, txId);
      if (!result) {
        await withdrawCommand(ctx, txId);
        throw conflict(`daemon ${daemon.name} did not confirm the workspace in time; try again`);
      }
      if (result.status === 'error') {
        const e = result.error;
        const code =
          e?.code === 'WORKSPACE_INVALID' || e?.code === 'PAYLOAD_INVALID' ? 'bad_request' : 'conflict';
        throw new AppError(code, `the daemon refused the workspace: ${e?.message ?? 'unknown error'}`, {
          daemon_error: e,
        });
      }
      // A pending registration of the same path is settled by this one.
      if (existing?.pending_tx_id) await withdrawCommand(ctx, existing.pending_tx_id);
      const accepted = { id: workspaceId, path: acceptedPath(result, wanted), name, existing };
      const { row, created } = await recordAccepted(ctx, daemon, accepted);
      ctx.status(created ? 201 : 200);
      return { data: workspaceOut(row) };
    },
  }),
  op({
    name: 'workspaces/list',
    summary: "A realm's or a daemon's workspaces.",
    input: z.union([z.object({ realm_id: id, limit, cursor }), z.object({ daemon_id: id, limit, cursor })]),
    async handler(ctx, input) {
      const realmId = await realmOfScope(ctx, ctx.actor, input);
      await settleWorkspaces(ctx, 'daemon_id' in input ? { daemonId: input.daemon_id } : { realmId });
      const page = await keysetPage(
        ctx.db
          .selectFrom('workspaces')
          .selectAll()
          .$if('daemon_id' in input, (q) =>
            q.where('daemon_id', '=', (input as { daemon_id: string }).daemon_id),
          )
          .$if(!('daemon_id' in input), (q) => q.where('realm_id', '=', realmId)),
        input,
      );
      return { data: page.data.map(workspaceOut), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'workspaces/get',
    summary: 'A workspace by id.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const found = await loadWorkspace(ctx, input.id);
      await requireRealm(ctx, user, found.realm_id, 'runs.view');
      await settleWorkspaces(ctx, { workspaceId: found.id });
      return { data: workspaceOut(await loadWorkspace(ctx, found.id)) };
    },
  }),
  op({
    name: 'workspaces/remove',
    summary:
      "Removes a workspace from the hub's catalog (by id, or by daemon_id and path); it does not touch the daemon. Unknown → removed: false.",
    input: z.union([z.object({ id }), z.object({ daemon_id: id, path: wsPath })]),
    async handler(ctx, input) {
      if (!ctx.actor) throw new AppError('unauthorized', 'authentication required');
      let w: WorkspacesTable | undefined;
      if ('id' in input) {
        w = await ctx.db.selectFrom('workspaces').selectAll().where('id', '=', input.id).executeTakeFirst();
        if (!w) return { removed: false };
        await requireWorkspaceAdmin(ctx, ctx.actor, { id: w.daemon_id, realm_id: w.realm_id });
      } else {
        const daemon = await ctx.db
          .selectFrom('daemons')
          .select(['id', 'realm_id'])
          .where('id', '=', input.daemon_id)
          .executeTakeFirst();
        if (!daemon) return { removed: false };
        await requireWorkspaceAdmin(ctx, ctx.actor, daemon);
        w = await findByPath(ctx, daemon.id, normalizeWorkspacePath(input.path));
        if (!w) return { removed: false };
      }
      const r = await ctx.db.deleteFrom('workspaces').where('id', '=', w.id).executeTakeFirst();
      // A registration its daemon has not received yet is withdrawn: the daemon never gets it.
      if (w.pending_tx_id) await withdrawCommand(ctx, w.pending_tx_id);
      return { removed: Number(r.numDeletedRows) > 0 };
    },
  }),
  op({
    name: 'workspaces/assign_teams',
    summary:
      'Sets the teams (team ids; a team_version_id stands for its team) a workspace runs. Each must be installed on the workspace’s daemon, and the workspace must be ready.',
    input: z.object({ workspace_id: id, team_ids: z.array(id).max(500) }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const found = await loadWorkspace(ctx, input.workspace_id);
      const { realm } = await requireRealm(ctx, user, found.realm_id, 'workspaces.manage');
      const w = await requireReadyWorkspace(ctx, found.id);
      const refs = [...new Set(input.team_ids)];
      const versions = refs.length
        ? await ctx.db
            .selectFrom('team_versions')
            .select(['id', 'team_id', 'name'])
            .where('org_id', '=', realm.org_id)
            .where((eb) => eb.or([eb('team_id', 'in', refs), eb('id', 'in', refs)]))
            .execute()
        : [];
      const teamOf = new Map<string, { team_id: string; name: string }>();
      for (const v of versions) {
        teamOf.set(v.team_id, v);
        teamOf.set(v.id, v);
      }
      const unknown = refs.filter((r) => !teamOf.has(r));
      if (unknown.length) throw notFound(`team(s) ${unknown.join(', ')}`);
      const teamIds = [...new Set(refs.map((r) => teamOf.get(r)!.team_id))];
      await settleInstalls(ctx, { daemonId: w.daemon_id });
      const installed = teamIds.length
        ? await ctx.db
            .selectFrom('team_installs')
            .select('team_id')
            .distinct()
            .where('daemon_id', '=', w.daemon_id)
            .where('status', '=', 'installed')
            .where('team_id', 'in', teamIds)
            .execute()
        : [];
      const have = new Set(installed.map((r) => r.team_id));
      const missing = teamIds.filter((t) => !have.has(t));
      if (missing.length) {
        const names = missing.map((t) => teamOf.get(t)!.name);
        throw conflict(`not installed on the workspace's daemon: ${names.join(', ')}; install them first`, {
          missing_team_ids: missing,
        });
      }
      const now = ctx.now();
      const txId = await inTx(ctx, async ({ db: trx, command }) => {
        await trx
          .updateTable('workspaces')
          .set({ team_ids: JSON.stringify(teamIds), updated_at: now })
          .where('id', '=', w.id)
          .execute();
        return command(w.daemon_id, 'workspaces/assign_teams', {
          workspace_id: w.id,
          path: w.path,
          team_ids: teamIds,
        });
      });
      return { data: { ...workspaceOut(await loadWorkspace(ctx, w.id)), tx_id: txId } };
    },
  }),
];
