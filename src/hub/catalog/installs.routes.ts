import { z } from 'zod';
import type { TeamInstallsTable } from '../../db/schema.js';
import { type AppError, conflict, notFound } from '../../shared/errors.js';
import { requireRealm, requireUser } from '../access/access.service.js';
import type { Hub } from '../context.js';
import { awaitCommand } from '../daemons/await-command.js';
import { inTx } from '../daemons/commands.js';
import { loadLiveDaemon, realmOfScope } from '../daemons/daemons.repo.js';
import { cursor, id, limit, type OpContext, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import { onTeamInstalled } from '../runs/dispatch.service.js';
import { buildInstallBundle, installOut, settleInstalls } from './installs.service.js';

function loadInstall(hub: Hub, daemonId: string, teamVersionId: string) {
  return hub.db
    .selectFrom('team_installs')
    .selectAll()
    .where('daemon_id', '=', daemonId)
    .where('team_version_id', '=', teamVersionId)
    .executeTakeFirst();
}

/** The daemon's refusal as a hub error (the command was acked with an error). */
function refused(what: string, error: { code: string; message: string } | null): AppError {
  return conflict(`the daemon refused to ${what}: ${error?.code ?? 'ERROR'}: ${error?.message ?? ''}`, {
    daemon_error: error,
  });
}

/** Shared by install and uninstall: permission, the team version in the daemon's org. */
async function target(ctx: OpContext, input: Body) {
  const user = requireUser(ctx.actor);
  const daemon = await loadLiveDaemon(ctx, input.daemon_id);
  const { realm } = await requireRealm(ctx, user, daemon.realm_id, 'teams.install');
  const tv = await ctx.db
    .selectFrom('team_versions')
    .selectAll()
    .where('id', '=', input.team_version_id)
    .where('org_id', '=', realm.org_id)
    .executeTakeFirst();
  if (!tv) throw notFound("team version (in the daemon's organization)");
  return { daemon, realm, tv };
}

const body = z.object({ team_version_id: id, daemon_id: id });
type Body = z.output<typeof body>;

export const installOps = [
  op({
    name: 'teams/install',
    summary:
      'Installs a team version (with every agent and child team it needs) on a daemon. Waits up to 10 s for the daemon; an offline daemon gets it when it reconnects (status: pending).',
    input: body,
    async handler(ctx, input) {
      const { daemon, tv } = await target(ctx, input);
      const command = await buildInstallBundle(ctx, tv);
      const now = ctx.now();
      const txId = await inTx(ctx, async ({ db: trx, command: send }) => {
        const tx = await send(daemon.id, 'teams/install', command);
        await trx
          .insertInto('team_installs')
          .values({
            id: ctx.newId(),
            daemon_id: daemon.id,
            realm_id: daemon.realm_id,
            team_version_id: tv.id,
            team_id: tv.team_id,
            status: 'uninstalled',
            pending_action: 'install',
            pending_tx_id: tx,
            last_error: null,
            installed_at: null,
            uninstalled_at: null,
            created_at: now,
            updated_at: now,
          })
          .onConflict((oc) =>
            oc.columns(['daemon_id', 'team_version_id']).doUpdateSet({
              pending_action: 'install',
              pending_tx_id: tx,
              last_error: null,
              updated_at: now,
            }),
          )
          .execute();
        return tx;
      });
      const result = await awaitCommand(ctx, daemon.id, txId);
      await settleInstalls(ctx, { daemonId: daemon.id });
      const row = (await loadInstall(ctx, daemon.id, tv.id)) as TeamInstallsTable;
      if (result?.status === 'error') throw refused(`install ${tv.name}@${tv.version}`, result.error);
      // Runs that waited for a daemon with this team may go now (else the re-dispatch pass sends them).
      if (row.status === 'installed') {
        await onTeamInstalled(ctx, daemon.realm_id, tv.id).catch((err: unknown) =>
          ctx.log.error({ err }, 'dispatch after an install failed'),
        );
      }
      return {
        data: { status: result ? 'installed' : 'pending', tx_id: txId, install: installOut(row) },
      };
    },
  }),
  op({
    name: 'teams/uninstall',
    summary:
      'Removes a team version from a daemon. Waits up to 10 s for the daemon; an offline daemon gets it when it reconnects (status: pending).',
    input: body,
    async handler(ctx, input) {
      const { daemon, tv } = await target(ctx, input);
      await settleInstalls(ctx, { daemonId: daemon.id });
      const existing = await loadInstall(ctx, daemon.id, tv.id);
      if (!existing || (existing.status === 'uninstalled' && existing.pending_action === null)) {
        return {
          data: {
            status: 'uninstalled',
            tx_id: null,
            install: existing ? installOut(existing) : null,
          },
        };
      }
      const now = ctx.now();
      const txId = await inTx(ctx, async ({ db: trx, command: send }) => {
        const tx = await send(daemon.id, 'teams/uninstall', { team_version_id: tv.id });
        await trx
          .updateTable('team_installs')
          .set({ pending_action: 'uninstall', pending_tx_id: tx, last_error: null, updated_at: now })
          .where('id', '=', existing.id)
          .execute();
        return tx;
      });
      const result = await awaitCommand(ctx, daemon.id, txId);
      await settleInstalls(ctx, { daemonId: daemon.id });
      const row = (await loadInstall(ctx, daemon.id, tv.id)) as TeamInstallsTable;
      if (result?.status === 'error') throw refused(`uninstall ${tv.name}@${tv.version}`, result.error);
      return {
        data: { status: result ? 'uninstalled' : 'pending', tx_id: txId, install: installOut(row) },
      };
    },
  }),
  op({
    name: 'teams/list_installs',
    summary: 'Team installations of a daemon, or of every daemon of a realm (confirmed and pending).',
    input: z.union([z.object({ daemon_id: id, limit, cursor }), z.object({ realm_id: id, limit, cursor })]),
    async handler(ctx, input) {
      const realmId = await realmOfScope(ctx, ctx.actor, input);
      const filter = 'daemon_id' in input ? { daemonId: input.daemon_id } : { realmId };
      await settleInstalls(ctx, filter);
      const page = await keysetPage(
        ctx.db
          .selectFrom('team_installs')
          .selectAll()
          .$if('daemon_id' in input, (q) => q.where('daemon_id', '=', filter.daemonId!))
          .$if(!('daemon_id' in input), (q) => q.where('realm_id', '=', realmId)),
        input,
      );
      return { data: page.data.map(installOut), next_cursor: page.next_cursor };
    },
  }),
];
