import type { Daemon } from '../../shared/api/daemons.js';
import type { HubClient } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { looksLikeId, resolveDaemon, resolveRealm } from '../resolve.js';

export type DaemonRow = Daemon;

/** A daemon id as given, or looked up by name in `--realm`. */
async function daemonId(client: HubClient, ref: string, opts: { realm?: string; org?: string }) {
  if (looksLikeId(ref)) return ref;
  if (!opts.realm) throw usageError(`to find daemon "${ref}" by name, give --realm`);
  return resolveDaemon(client, await resolveRealm(client, opts.realm, opts.org), ref);
}

export default defineCommand({
  summary: "A realm's daemons: list, get, remove",
  register(cmd, ctx) {
    withPaging(
      cmd
        .command('list')
        .description("A realm's daemons with their status")
        .requiredOption('--realm <realm>', 'realm id or name')
        .option('--org <org>', 'organization id or slug (to find the realm by name)'),
    ).action(async (opts: { realm: string; org?: string; limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const realmId = await resolveRealm(s.client, opts.realm, opts.org);
      const reply = await s.client.api.call('daemons/list', {
        realm_id: realmId,
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('NAME', 'name'),
          col('STATUS', 'status'),
          col('LAST SEEN', (d) => time(d.last_seen_at)),
          col('CREATED', (d) => time(d.created_at)),
        ],
        'No daemons.',
      );
    });

    cmd
      .command('get')
      .description('Show a daemon')
      .argument('<daemon>', 'daemon id, or name with --realm')
      .option('--realm <realm>', 'realm id or name (to find the daemon by name)')
      .option('--org <org>', 'organization id or slug (to find the realm by name)')
      .action(async (ref: string, opts: { realm?: string; org?: string }, c) => {
        const s = session(ctx, c);
        const id = await daemonId(s.client, ref, opts);
        const reply = await s.client.api.call('daemons/get', { id });
        s.print(reply, () =>
          formatRecord([
            ['id', reply.data.id],
            ['name', reply.data.name],
            ['realm', reply.data.realm_id],
            ['status', reply.data.status],
            ['last seen', time(reply.data.last_seen_at)],
            ['created', time(reply.data.created_at)],
          ]),
        );
      });

    cmd
      .command('remove')
      .description('Remove a daemon and revoke its realm token')
      .argument('<daemon>', 'daemon id, or name with --realm')
      .option('--realm <realm>', 'realm id or name (to find the daemon by name)')
      .option('--org <org>', 'organization id or slug (to find the realm by name)')
      .action(async (ref: string, opts: { realm?: string; org?: string }, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('daemons/remove', { id: await daemonId(s.client, ref, opts) });
        s.print(reply, () => `Removed daemon ${ref}; its realm token no longer works.\n`);
      });
  },
});
