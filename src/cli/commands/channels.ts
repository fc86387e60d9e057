import type { Command } from 'commander';
import type { Request } from '../../shared/api/client.js';
import type { Channel as ApiChannel } from '../../shared/api/notifications.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { resolveOrg, resolveRealm } from '../resolve.js';

type Channel = ApiChannel & { secret?: string };

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** `--webhook URL`, `--slack URL`, `--discord URL` (each repeatable) → destinations. */
function destinationOptions(cmd: Command): Command {
  return cmd
    .option('--webhook <url>', 'a signed JSON webhook destination (repeatable)', collect)
    .option('--slack <url>', 'a Slack incoming webhook (repeatable)', collect)
    .option('--discord <url>', 'a Discord webhook (repeatable)', collect);
}

type DestOpts = { webhook?: string[]; slack?: string[]; discord?: string[] };
const destinationsOf = (o: DestOpts) => [
  ...(o.webhook ?? []).map((u) => ({ type: 'webhook' as const, webhook_url: u })),
  ...(o.slack ?? []).map((u) => ({ type: 'slack' as const, webhook_url: u })),
  ...(o.discord ?? []).map((u) => ({ type: 'discord' as const, webhook_url: u })),
];

type ScopeOpts = { realm?: string; org?: string };
async function scopeOf(
  client: Parameters<typeof resolveOrg>[0],
  o: ScopeOpts,
): Promise<Record<string, string>> {
  if (o.realm) return { realm_id: await resolveRealm(client, o.realm, o.org) };
  if (o.org) return { org_id: await resolveOrg(client, o.org) };
  return {};
}

const channelRecord = (c: Channel) =>
  formatRecord([
    ['id', c.id],
    ['name', c.name],
    ['scope', c.realm_id ? `realm ${c.realm_id}` : c.org_id ? `organization ${c.org_id}` : 'personal'],
    ['enabled', c.enabled ? 'yes' : 'no'],
    ['destinations', c.destinations.map((d) => `${d.type} ${d.webhook_url}`).join('\n') || '(none)'],
    ['rules', c.rule_count],
    ...(c.locked ? [['locked', 'yes'] as const] : []),
    ...(c.lock_reason ? [['reason', c.lock_reason] as const] : []),
    ['updated', time(c.updated_at)],
  ]);

const SECRET_NOTE = (secret: string) =>
  `\nSigning secret (shown once; verify X-Svc-Signature with it):\n  ${secret}\n`;

export default defineCommand({
  summary: 'Notification channels: new, list, update, remove, test, deliveries',
  register(cmd, ctx) {
    destinationOptions(
      cmd
        .command('new')
        .description('Create a channel of a realm (--realm), an organization (--org) or your own (neither)')
        .argument('<name>', 'channel name')
        .option('--realm <realm>', 'realm id or name')
        .option('--org <org>', 'organization id or slug')
        .option('--disabled', 'create it turned off'),
    ).action(async (name: string, opts: ScopeOpts & DestOpts & { disabled?: boolean }, c) => {
      const s = session(ctx, c);
      const destinations = destinationsOf(opts);
      if (destinations.length === 0)
        throw usageError('give at least one --webhook, --slack or --discord URL');
      const reply = await s.client.api.call('notification_channels/new', {
        ...(await scopeOf(s.client, opts)),
        name,
        destinations,
        ...(opts.disabled ? { enabled: false } : {}),
      });
      s.print(
        reply,
        () =>
          `Created channel ${reply.data.name} (${reply.data.id}).\n${SECRET_NOTE(reply.data.secret ?? '')}`,
      );
    });

    withPaging(
      cmd
        .command('list')
        .description(
          "A realm's or organization's channels and your own (only your own without --realm/--org)",
        )
        .option('--realm <realm>', 'realm id or name')
        .option('--org <org>', 'organization id or slug'),
    ).action(async (opts: ScopeOpts & { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('notification_channels/list', {
        ...(await scopeOf(s.client, opts)),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('NAME', 'name'),
          col('SCOPE', (r) => (r.realm_id ? 'realm' : r.org_id ? 'org' : 'personal')),
          col('ENABLED', (r) => (r.enabled ? 'yes' : 'no')),
          col('DESTINATIONS', (r) => r.destinations.map((d) => d.type).join(',')),
          col('RULES', 'rule_count'),
          col('LOCKED', (r) => (r.locked ? 'yes' : '')),
        ],
        'No channels.',
      );
    });

    destinationOptions(
      cmd
        .command('update')
        .description('Rename, turn on or off, or replace the destinations of a channel')
        .argument('<id>', 'channel id')
        .option('--name <name>', 'new name')
        .option('--enable', 'turn it on (also after it was disabled automatically)')
        .option('--disable', 'turn it off')
        .option('--clear-destinations', 'remove every destination'),
    ).action(
      async (
        id: string,
        opts: DestOpts & { name?: string; enable?: boolean; disable?: boolean; clearDestinations?: boolean },
        c,
      ) => {
        if (opts.enable && opts.disable) throw usageError('give --enable or --disable, not both');
        const s = session(ctx, c);
        const destinations = destinationsOf(opts);
        const reply = await s.client.api.call('notification_channels/update', {
          id,
          ...(opts.name ? { name: opts.name } : {}),
          ...(opts.enable ? { enabled: true } : opts.disable ? { enabled: false } : {}),
          ...(destinations.length || opts.clearDestinations ? { destinations } : {}),
        });
        s.print(reply, () => channelRecord(reply.data));
      },
    );

    cmd
      .command('remove')
      .description('Remove a channel (a locked system channel cannot be removed)')
      .argument('<id>', 'channel id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('notification_channels/remove', { id });
        s.print(reply, () => `Removed channel ${id}.\n`);
      });

    cmd
      .command('test')
      .description('Send a test event to every destination of a channel and show the outcome')
      .argument('<id>', 'channel id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('notification_channels/test', { id, wait: true });
        s.print(reply, () =>
          reply.data.deliveries
            .map(
              (d) =>
                `${d.destination.type} ${d.destination.webhook_url}: ${d.state}` +
                `${d.last_status_code ? ` (HTTP ${d.last_status_code}, ${d.last_latency_ms} ms)` : ''}` +
                `${d.last_error && d.state !== 'succeeded' ? ` — ${d.last_error}` : ''}\n`,
            )
            .join(''),
        );
      });

    cmd
      .command('rotate-secret')
      .description("Replace a channel's signing secret (the new one is shown once)")
      .argument('<id>', 'channel id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('notification_channels/rotate_secret', { id });
        s.print(
          reply,
          () => `Rotated the secret of ${reply.data.name}.${SECRET_NOTE(reply.data.secret ?? '')}`,
        );
      });

    withPaging(
      cmd
        .command('deliveries')
        .description("A channel's delivery log, newest first")
        .argument('<id>', 'channel id')
        .option('--state <state>', 'pending, succeeded, failed or cancelled'),
    ).action(async (id: string, opts: { state?: string; limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('notifications/list_deliveries', {
        channel_id: id,
        // The hub checks the value (invalid_params names the allowed ones).
        ...(opts.state ? { state: opts.state as Request<'notifications/list_deliveries'>['state'] } : {}),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('EVENT', 'event_type'),
          col('TO', (d) => d.destination.type),
          col('STATE', 'state'),
          col('ATTEMPTS', 'attempts'),
          col('STATUS', 'last_status_code'),
          col('MS', 'last_latency_ms'),
          col('ERROR', (d) => d.last_error?.slice(0, 80)),
          col('CREATED', (d) => time(d.created_at)),
        ],
        'No deliveries.',
      );
    });
  },
});
