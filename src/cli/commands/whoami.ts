import type { User, WhoAmI } from '../../shared/api/access.js';
import { defineCommand, session } from '../command.js';
import { formatRecord } from '../output.js';

export type UserOut = User;

export type WhoamiReply = { data: WhoAmI };

export default defineCommand({
  summary: 'Show who the current token belongs to',
  register(cmd, ctx) {
    cmd.action(async (_opts, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('auth/whoami');
      s.print(reply, () => {
        const { user, daemon } = reply.data;
        const hub: [string, unknown] = ['hub', s.client.url];
        if (daemon)
          return formatRecord([['daemon', daemon.name], ['id', daemon.id], ['realm', daemon.realm_id], hub]);
        return formatRecord([
          ['user', user?.handle],
          ['email', user?.email],
          ['name', user?.display_name],
          ['id', user?.id],
          ['site admin', user?.is_site_admin],
          hub,
        ]);
      });
    });
  },
});
