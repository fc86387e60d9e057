import type { TeamVersion } from '../../shared/api/catalog.js';
import type { InstallChange } from '../../shared/api/daemons.js';
import { addCatalogCommands, ORG_HELP } from '../catalog-commands.js';
import { resolveCatalog, resolveDaemonRef } from '../catalog-refs.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { col, time } from '../output.js';

type TeamRow = TeamVersion;

type InstallReply = { data: InstallChange };

export default defineCommand({
  summary: 'Teams: register, list, get, remove, install on daemons',
  register(cmd, ctx) {
    addCatalogCommands<TeamRow>(cmd, ctx, {
      ops: 'teams',
      noun: 'team',
      field: 'definition',
      fileName: 'definition',
      listDescription: "An organization's team versions, newest version first",
      getDescription: 'Show a team version and its phases',
      removeDescription: 'Remove a team version (refused while called by a team or installed)',
      columns: [
        col('ID', 'id'),
        col('NAME', 'name'),
        col('VERSION', 'version'),
        col('PHASES', (t) => t.definition.phases.map((p) => p.name).join(', ')),
        col('UPDATED', (t) => time(t.updated_at)),
      ],
      record: (t) => [
        ['id', t.id],
        ['team id', t.team_id],
        ['name', t.name],
        ['version', t.version],
        ['description', t.description],
        ...t.definition.phases.map(
          (p, i) =>
            [
              `phase ${i + 1}`,
              `${p.name}: ${p.agent ? `agent ${p.agent}` : `team ${p.team}`}${p.review ? ' (review)' : ''}`,
            ] as const,
        ),
        ['updated', time(t.updated_at)],
      ],
    });

    for (const verb of ['install', 'uninstall'] as const) {
      cmd
        .command(verb)
        .description(
          verb === 'install'
            ? 'Install a team version (with its agents and child teams) on a daemon'
            : 'Remove a team version from a daemon',
        )
        .argument('<team>', 'team version id, or NAME[@VERSION] (default: newest)')
        .requiredOption('--daemon <daemon>', 'daemon id, or name (in --realm, default "default")')
        .option('--realm <realm>', 'realm id or name (to find the daemon by name)')
        .option('--org <org>', ORG_HELP)
        .action(async (ref: string, opts: { daemon: string; realm?: string; org?: string }, c) => {
          const s = session(ctx, c);
          const t = await resolveCatalog(s.client, 'teams', ref, opts.org);
          const daemonId = await resolveDaemonRef(s.client, opts.daemon, opts);
          const reply = await s.client.call<InstallReply>(`teams/${verb}`, {
            team_version_id: t.id,
            daemon_id: daemonId,
          });
          const what = `${t.name}@${t.version}`;
          s.print(reply, () =>
            reply.data.status === 'pending'
              ? `Queued: ${verb} ${what} on daemon ${opts.daemon} happens when the daemon is back online.\n`
              : verb === 'install'
                ? `Installed ${what} on daemon ${opts.daemon}.\n`
                : `Uninstalled ${what} from daemon ${opts.daemon}.\n`,
          );
        });
    }

    withPaging(
      cmd
        .command('installs')
        .description('Team versions installed on a daemon')
        .requiredOption('--daemon <daemon>', 'daemon id, or name (in --realm, default "default")')
        .option('--realm <realm>', 'realm id or name (to find the daemon by name)')
        .option('--org <org>', ORG_HELP),
    ).action(
      async (opts: { daemon: string; realm?: string; org?: string; limit?: number; cursor?: string }, c) => {
        const s = session(ctx, c);
        const daemonId = await resolveDaemonRef(s.client, opts.daemon, opts);
        const reply = await s.client.api.call('teams/list_installs', {
          daemon_id: daemonId,
          ...pageArgs(opts),
        });
        s.printPage(
          reply,
          [
            col('TEAM VERSION', 'team_version_id'),
            col('STATUS', 'status'),
            col('PENDING', 'pending'),
            col('INSTALLED', (r) => time(r.installed_at)),
          ],
          'No teams installed.',
        );
      },
    );
  },
});
