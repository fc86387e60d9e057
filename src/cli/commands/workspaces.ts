import path from 'node:path';
import { resolveCatalog, resolveDaemonRef } from '../catalog-refs.js';
import type { HubClient } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { looksLikeId, realmOrg, resolveRealm, resolveWorkspace } from '../resolve.js';

const DAEMON_HELP = 'daemon id, or name (in --realm, default "default")';
const REALM_HELP = 'realm id or name (to find the daemon by name)';
const ORG_HELP = 'organization id or slug (to find a realm by name)';
const WORKSPACE_HELP = 'workspace id, or its name or path in --realm (default "default")';

/** A workspace by id, or by name or path in `--realm`. */
async function workspaceRef(client: HubClient, ref: string, o: { realm?: string; org?: string }) {
  if (looksLikeId(ref)) return ref;
  return resolveWorkspace(client, await resolveRealm(client, o.realm ?? 'default', o.org), ref);
}

export default defineCommand({
  summary: 'Workspaces on daemons: register, list, get, remove, …',
  register(cmd, ctx) {
    cmd
      .command('register')
      .description("Register a directory on a daemon's machine as a workspace (the daemon checks it)")
      .argument('<path>', 'absolute path on the daemon’s machine (a relative one is resolved here)')
      .requiredOption('--daemon <daemon>', DAEMON_HELP)
      .option('--name <name>', 'display name (default: the directory name)')
      .option('--realm <realm>', REALM_HELP)
      .option('--org <org>', ORG_HELP)
      .action(async (p: string, opts: { daemon: string; name?: string; realm?: string; org?: string }, c) => {
        const s = session(ctx, c);
        const daemonId = await resolveDaemonRef(s.client, opts.daemon, opts);
        const reply = await s.client.api.call('workspaces/register', {
          daemon_id: daemonId,
          path: path.resolve(ctx.cwd, p),
          ...(opts.name ? { name: opts.name } : {}),
        });
        const w = reply.data;
        s.print(reply, () =>
          w.status === 'pending'
            ? `Workspace ${w.name} (${w.id}) at ${w.path} is pending: the daemon is offline and checks the path when it connects.\n`
            : `Registered workspace ${w.name} (${w.id}) at ${w.path}.\n`,
        );
      });

    withPaging(
      cmd
        .command('list')
        .description("A realm's or a daemon's workspaces")
        .option('--realm <realm>', 'realm id or name (default: "default")')
        .option('--daemon <daemon>', DAEMON_HELP)
        .option('--org <org>', ORG_HELP),
    ).action(
      async (opts: { realm?: string; daemon?: string; org?: string; limit?: number; cursor?: string }, c) => {
        const s = session(ctx, c);
        const filter = opts.daemon
          ? { daemon_id: await resolveDaemonRef(s.client, opts.daemon, opts) }
          : { realm_id: await resolveRealm(s.client, opts.realm ?? 'default', opts.org) };
        const reply = await s.client.api.call('workspaces/list', {
          ...filter,
          ...pageArgs(opts),
        });
        s.printPage(
          reply,
          [
            col('ID', 'id'),
            col('NAME', 'name'),
            col('PATH', 'path'),
            col('STATUS', 'status'),
            col('DAEMON', 'daemon_id'),
            col('TEAMS', (w) => w.team_ids.length),
            col('CREATED', (w) => time(w.created_at)),
          ],
          'No workspaces.',
        );
      },
    );

    cmd
      .command('get')
      .description('Show a workspace')
      .argument('<workspace>', WORKSPACE_HELP)
      .option('--realm <realm>', 'realm id or name (to find the workspace by name)')
      .option('--org <org>', ORG_HELP)
      .action(async (ref: string, opts: { realm?: string; org?: string }, c) => {
        const s = session(ctx, c);
        const id = await workspaceRef(s.client, ref, opts);
        const reply = await s.client.api.call('workspaces/get', { id });
        const w = reply.data;
        s.print(reply, () =>
          formatRecord([
            ['id', w.id],
            ['name', w.name],
            ['path', w.path],
            ['status', w.error ? `${w.status}: ${w.error.message}` : w.status],
            ['daemon', w.daemon_id],
            ['realm', w.realm_id],
            ['teams', w.team_ids.join(', ')],
            ['created', time(w.created_at)],
          ]),
        );
      });

    cmd
      .command('remove')
      .description("Remove a workspace from the hub's catalog (the daemon's directory is untouched)")
      .argument('<workspace>', `${WORKSPACE_HELP}; or its path on --daemon`)
      .option('--daemon <daemon>', `select by path on this daemon: ${DAEMON_HELP}`)
      .option('--realm <realm>', REALM_HELP)
      .option('--org <org>', ORG_HELP)
      .action(async (ref: string, opts: { daemon?: string; realm?: string; org?: string }, c) => {
        const s = session(ctx, c);
        const body = opts.daemon
          ? {
              daemon_id: await resolveDaemonRef(s.client, opts.daemon, opts),
              path: path.resolve(ctx.cwd, ref),
            }
          : { id: await workspaceRef(s.client, ref, opts) };
        const reply = await s.client.api.call('workspaces/remove', body);
        s.print(reply, () => (reply.removed ? `Removed workspace ${ref}.\n` : `No workspace ${ref}.\n`));
      });

    cmd
      .command('assign-teams')
      .description('Set the teams a workspace runs (each must be installed on its daemon)')
      .argument('<workspace>', WORKSPACE_HELP)
      .argument('[teams...]', 'team ids or names (none: clear)')
      .option('--realm <realm>', 'realm id or name (to find the workspace by name)')
      .option('--org <org>', ORG_HELP)
      .action(async (ref: string, teams: string[], opts: { realm?: string; org?: string }, c) => {
        const s = session(ctx, c);
        const id = await workspaceRef(s.client, ref, opts);
        const w = (await s.client.api.call('workspaces/get', { id })).data;
        const orgId = teams.length ? await realmOrg(s.client, w.realm_id) : null;
        const teamIds: string[] = [];
        for (const t of teams) {
          if (t.includes('@')) throw usageError(`teams are assigned by name or id, without a version: ${t}`);
          teamIds.push(looksLikeId(t) ? t : (await resolveCatalog(s.client, 'teams', t, orgId!)).team_id!);
        }
        const reply = await s.client.api.call('workspaces/assign_teams', {
          workspace_id: id,
          team_ids: teamIds,
        });
        s.print(reply, () =>
          teams.length
            ? `Workspace ${w.name} runs: ${teams.join(', ')}.\n`
            : `Workspace ${w.name} runs no team.\n`,
        );
      });
  },
});
