import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { col, formatRecord, time } from '../output.js';

export default defineCommand({
  summary: 'Deployment-wide settings: set, get, list, remove',
  register(cmd, ctx) {
    cmd
      .command('set')
      .description('Set a setting')
      .argument('<key>', 'e.g. runs.lease_ms')
      .argument('<value>', 'the value (a string)')
      .action(async (key: string, value: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('settings/set', { key, value });
        s.print(reply, () => `${key} = ${value}\n`);
      });

    cmd
      .command('get')
      .description('Show a setting')
      .argument('<key>')
      .action(async (key: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('settings/get_by_key', { key });
        s.print(reply, () =>
          reply.setting
            ? formatRecord([
                ['key', reply.setting.key],
                ['value', reply.setting.value],
                ['updated', time(reply.setting.updated_at)],
              ])
            : `${key} is not set.\n`,
        );
      });

    withPaging(cmd.command('list').description('Every setting')).action(
      async (opts: { limit?: number; cursor?: string }, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('settings/list', pageArgs(opts));
        s.printPage(
          reply,
          [col('KEY', 'key'), col('VALUE', 'value'), col('UPDATED', (r) => time(r.updated_at))],
          'No settings.',
        );
      },
    );

    cmd
      .command('remove')
      .description('Remove a setting')
      .argument('<key>')
      .action(async (key: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('settings/remove', { key });
        s.print(reply, () => (reply.removed ? `Removed ${key}.\n` : `${key} was not set.\n`));
      });
  },
});
