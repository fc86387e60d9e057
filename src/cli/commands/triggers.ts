import type { Page } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { col, formatRecord, time } from '../output.js';
import { realmOf, type TargetOpts, targetBody, targetOptions } from '../run-target.js';

interface Trigger {
  id: string;
  name: string;
  team?: string;
  team_id: string | null;
  agent?: string;
  workspace_id: string | null;
  url: string;
  secret?: string;
  updated_at: number;
  recent_deliveries?: {
    received_at: number;
    outcome: string;
    http_status: number;
    run_id: string | null;
    error: string | null;
  }[];
}

const triggerRecord = (t: Trigger) =>
  formatRecord([
    ['id', t.id],
    ['name', t.name],
    ['runs', t.agent ? `agent ${t.agent}` : `team ${t.team ?? t.team_id}`],
    ['url', t.url],
    ['workspace', t.workspace_id ?? '-'],
    ['updated', time(t.updated_at)],
  ]);

const SECRET_NOTE = (secret: string) =>
  `\nSigning secret (shown once): sign "<X-Svc-Timestamp>.<body>" with HMAC-SHA256 and send\nX-Svc-Signature: sha256=<hex>. See docs/security.md.\n  ${secret}\n`;

export default defineCommand({
  summary: 'Triggers: incoming webhooks that start runs: new, list, get, remove, rotate',
  register(cmd, ctx) {
    targetOptions(
      cmd.command('new').description('Make an incoming webhook').argument('<name>', 'trigger name'),
      true,
    ).action(async (name: string, opts: TargetOpts, c) => {
      const s = session(ctx, c);
      const reply = await s.client.call<{ data: Trigger }>('triggers/new', {
        realm_id: await realmOf(s.client, opts),
        name,
        ...(await targetBody(s.client, opts, true)),
      });
      s.print(
        reply,
        () =>
          `Created trigger ${reply.data.name}.\n${triggerRecord(reply.data)}${SECRET_NOTE(reply.data.secret ?? '')}`,
      );
    });

    withPaging(
      cmd
        .command('list')
        .description("A realm's triggers")
        .option('--realm <realm>', 'realm id or name (default "default")')
        .option('--org <org>', 'organization id or slug (to find a realm by name)'),
    ).action(async (opts: TargetOpts & { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.call<Page<Trigger>>('triggers/list', {
        realm_id: await realmOf(s.client, { ...opts, input: {} }),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('NAME', 'name'),
          col('RUNS', (r) => r.agent ?? r.team ?? r.team_id),
          col('URL', 'url'),
        ],
        'No triggers.',
      );
    });

    cmd
      .command('get')
      .description('Show a trigger, its URL and its newest deliveries')
      .argument('<id>', 'trigger id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ data: Trigger }>('triggers/get', { id });
        s.print(reply, () => {
          const lines = (reply.data.recent_deliveries ?? []).map(
            (d) =>
              `  ${time(d.received_at)}  ${d.outcome} (HTTP ${d.http_status})${d.run_id ? ` run ${d.run_id}` : ''}${d.error ? ` — ${d.error}` : ''}\n`,
          );
          return `${triggerRecord(reply.data)}\ndeliveries:\n${lines.join('') || '  (none)\n'}`;
        });
      });

    cmd
      .command('remove')
      .description('Remove a trigger (its URL stops working; its runs stay)')
      .argument('<id>', 'trigger id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ removed: boolean }>('triggers/remove', { id });
        s.print(reply, () => (reply.removed ? `Removed trigger ${id}.\n` : `No trigger ${id}.\n`));
      });

    cmd
      .command('rotate')
      .description("Replace a trigger's signing secret (the old one stops working at once)")
      .argument('<id>', 'trigger id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ data: Trigger }>('triggers/rotate_secret', { id });
        s.print(
          reply,
          () => `Rotated the secret of ${reply.data.name}.${SECRET_NOTE(reply.data.secret ?? '')}`,
        );
      });
  },
});
