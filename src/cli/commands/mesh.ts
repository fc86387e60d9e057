import { defineCommand, session } from '../command.js';
import { col, formatTable } from '../output.js';

export default defineCommand({
  summary: 'Mesh network adapters: adapters',
  register(cmd, ctx) {
    cmd
      .command('adapters')
      .description('The mesh providers this hub supports, with the settings each needs')
      .action(async (_opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('mesh/adapters/list');
        s.print(reply, () =>
          reply.adapters.length === 0
            ? 'No mesh adapters are enabled (setting mesh.enabled_adapters).\n'
            : formatTable(reply.adapters, [
                col('ID', 'id'),
                col('NAME', 'name'),
                col('ENABLED', 'enabled'),
                col('SETTINGS', (a) => a.settings.map((x) => (x.required ? x.key : `${x.key}?`)).join(', ')),
                col('DESCRIPTION', 'description'),
              ]),
        );
      });
  },
});
