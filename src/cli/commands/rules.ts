import type { Request } from '../../shared/api/client.js';
import type { RunState } from '../../shared/api/run-states.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, time } from '../output.js';
import { resolveOrg, resolveRealm } from '../resolve.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

type ScopeOpts = { realm?: string; org?: string };
async function scopeOf(
  client: Parameters<typeof resolveOrg>[0],
  o: ScopeOpts,
): Promise<Record<string, string>> {
  if (o.realm) return { realm_id: await resolveRealm(client, o.realm, o.org) };
  if (o.org) return { org_id: await resolveOrg(client, o.org) };
  throw usageError('give --realm or --org');
}

export default defineCommand({
  summary: 'Notification rules: new, list, remove',
  register(cmd, ctx) {
    cmd
      .command('new')
      .description('Send events of one kind of a realm (--realm) or an organization (--org) to channels')
      .argument('<event>', 'event kind: run.ended, review.requested, invite.sent, daemon.disconnected, …')
      .requiredOption('--channel <id>', 'channel id (repeatable)', collect)
      .option('--realm <realm>', 'realm id or name')
      .option('--org <org>', 'organization id or slug')
      .option('--team <team_id>', 'only events of this team')
      .option('--state <state>', 'only runs in (or ending in) this state, e.g. failed')
      .action(
        async (event: string, opts: ScopeOpts & { channel: string[]; team?: string; state?: string }, c) => {
          const s = session(ctx, c);
          const filter = {
            ...(opts.team ? { team_id: opts.team } : {}),
            ...(opts.state ? { state: opts.state as RunState } : {}),
          };
          const reply = await s.client.api.call('realms/new_notification_rule', {
            ...(await scopeOf(s.client, opts)),
            // The hub checks the event kind (invalid_params names the allowed ones).
            event: event as Request<'realms/new_notification_rule'>['event'],
            channel_ids: opts.channel,
            ...(Object.keys(filter).length ? { filter } : {}),
          });
          s.print(
            reply,
            () => `Created rule ${reply.data.id}: ${event} → ${reply.data.channel_ids.join(', ')}\n`,
          );
        },
      );

    withPaging(
      cmd
        .command('list')
        .description("A realm's or an organization's notification rules")
        .option('--realm <realm>', 'realm id or name')
        .option('--org <org>', 'organization id or slug'),
    ).action(async (opts: ScopeOpts & { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('realms/list_notification_rules', {
        ...(await scopeOf(s.client, opts)),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('EVENT', 'event'),
          col('CHANNELS', (r) => r.channel_ids.join(', ')),
          col('FILTER', (r) =>
            r.filter
              ? Object.entries(r.filter)
                  .map(([k, v]) => `${k}=${v}`)
                  .join(' ')
              : '',
          ),
          col('LOCKED', (r) => (r.locked ? 'yes' : '')),
          col('CREATED', (r) => time(r.created_at)),
        ],
        'No rules.',
      );
    });

    cmd
      .command('remove')
      .description('Remove a rule (the locked system rule cannot be removed)')
      .argument('<id>', 'rule id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('realms/remove_notification_rules', { id });
        s.print(reply, () => `Removed rule ${id}.\n`);
      });
  },
});
