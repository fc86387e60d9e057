import type { Page } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { realmOf, type TargetOpts, targetBody, targetOptions } from '../run-target.js';

interface Schedule {
  id: string;
  realm_id: string;
  team?: string;
  team_id: string | null;
  agent?: string;
  agent_id: string | null;
  workspace_id: string | null;
  cron: string;
  timezone: string;
  overlap: string;
  catch_up: string;
  enabled: boolean;
  next_fire_at: number | null;
  last_fired_at: number | null;
  last_run_id: string | null;
}

const scheduleRecord = (s: Schedule) =>
  formatRecord([
    ['id', s.id],
    ['runs', s.agent ? `agent ${s.agent}` : `team ${s.team ?? s.team_id}`],
    ['cron', `${s.cron} (${s.timezone})`],
    ['overlap', s.overlap],
    ['catch up', s.catch_up],
    ['enabled', s.enabled ? 'yes' : 'no'],
    ['next', time(s.next_fire_at)],
    ['last', time(s.last_fired_at)],
    ['last run', s.last_run_id ?? '-'],
    ['workspace', s.workspace_id ?? '-'],
  ]);

interface TimeOpts {
  cron?: string;
  timezone?: string;
  overlap?: string;
  catchUp?: string;
  name?: string;
}
const timeBody = (o: TimeOpts) => ({
  ...(o.cron ? { cron: o.cron } : {}),
  ...(o.timezone ? { timezone: o.timezone } : {}),
  ...(o.overlap ? { overlap: o.overlap } : {}),
  ...(o.catchUp ? { catch_up: o.catchUp } : {}),
  ...(o.name ? { run_name: o.name } : {}),
});

export default defineCommand({
  summary: 'Schedules: runs on a clock (cron): new, list, get, update, remove, trigger',
  register(cmd, ctx) {
    const timeOptions = (c: typeof cmd) =>
      c
        .option('--timezone <zone>', 'IANA time zone (default UTC)')
        .option('--overlap <policy>', 'while a run is going: skip (default), queue or cancel_previous')
        .option('--catch-up <policy>', 'after the hub was down: none (default), latest or all')
        .option('--name <name>', 'run name');

    timeOptions(
      targetOptions(
        cmd
          .command('new')
          .description('Make a schedule: CRON is 5 fields, or 6 with seconds first ("*/2 * * * * *")')
          .argument('<cron>', 'cron expression'),
        true,
      ).option('--disabled', 'make it paused'),
    ).action(async (cron: string, opts: TargetOpts & TimeOpts & { disabled?: boolean }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.call<{ data: Schedule }>('schedules/new', {
        realm_id: await realmOf(s.client, opts),
        ...(await targetBody(s.client, opts, true)),
        ...timeBody({ ...opts, cron }),
        ...(opts.disabled ? { enabled: false } : {}),
      });
      s.print(reply, () => `Created schedule ${reply.data.id}.\n${scheduleRecord(reply.data)}`);
    });

    withPaging(
      cmd
        .command('list')
        .description("A realm's schedules")
        .option('--realm <realm>', 'realm id or name (default "default")')
        .option('--org <org>', 'organization id or slug (to find a realm by name)'),
    ).action(async (opts: TargetOpts & { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.call<Page<Schedule>>('schedules/list', {
        realm_id: await realmOf(s.client, { ...opts, input: {} }),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('RUNS', (r) => r.agent ?? r.team ?? r.team_id),
          col('CRON', 'cron'),
          col('ZONE', 'timezone'),
          col('ENABLED', (r) => (r.enabled ? 'yes' : 'no')),
          col('NEXT', (r) => time(r.next_fire_at)),
          col('LAST RUN', (r) => r.last_run_id ?? ''),
        ],
        'No schedules.',
      );
    });

    cmd
      .command('get')
      .description('Show a schedule and its next time')
      .argument('<id>', 'schedule id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ data: Schedule }>('schedules/get', { id });
        s.print(reply, () => scheduleRecord(reply.data));
      });

    timeOptions(
      targetOptions(
        cmd
          .command('update')
          .description('Change a schedule; a new time or --enable counts from now')
          .argument('<id>', 'schedule id')
          .option('--cron <cron>', 'new cron expression')
          .option('--enable', 'resume it')
          .option('--disable', 'pause it'),
        false,
      ),
    ).action(async (id: string, opts: TargetOpts & TimeOpts & { enable?: boolean; disable?: boolean }, c) => {
      if (opts.enable && opts.disable) throw usageError('give --enable or --disable, not both');
      const s = session(ctx, c);
      const reply = await s.client.call<{ data: Schedule }>('schedules/update', {
        id,
        ...(await targetBody(s.client, opts, false)),
        ...timeBody(opts),
        ...(opts.enable ? { enabled: true } : opts.disable ? { enabled: false } : {}),
      });
      s.print(reply, () => scheduleRecord(reply.data));
    });

    cmd
      .command('remove')
      .description('Remove a schedule (its runs stay)')
      .argument('<id>', 'schedule id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ removed: boolean }>('schedules/remove', { id });
        s.print(reply, () => (reply.removed ? `Removed schedule ${id}.\n` : `No schedule ${id}.\n`));
      });

    cmd
      .command('trigger')
      .description('Start one run of a schedule now')
      .argument('<id>', 'schedule id')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ data: { run_id: string; run_name: string; state: string } }>(
          'schedules/trigger',
          { id },
        );
        s.print(
          reply,
          () => `Started run ${reply.data.run_name} (${reply.data.run_id}): ${reply.data.state}.\n`,
        );
      });
  },
});
