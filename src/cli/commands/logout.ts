import type { Command } from 'commander';
import { createHubClient } from '../client.js';
import { defineCommand } from '../command.js';
import { profileName, readConfig, writeConfig } from '../config.js';

export default defineCommand({
  summary: 'Forget the saved profile (ending its session)',
  register(cmd, ctx) {
    cmd.action(async (_opts: unknown, c: Command) => {
      const globals = c.optsWithGlobals<{ profile?: string }>();
      const name = profileName(ctx, globals.profile);
      const config = readConfig(ctx);
      const profile = name ? config.profiles[name] : undefined;
      if (!name || !profile) {
        ctx.stdout.write('Not logged in.\n');
        return;
      }
      if (profile.token_kind === 'session') {
        // Best effort: the profile is forgotten even when the hub cannot be reached.
        await createHubClient({ url: profile.hub_url, token: profile.token, fetch: ctx.fetch })
          .call('auth/sign_out')
          .catch(() => undefined);
      }
      delete config.profiles[name];
      if (config.current === name) config.current = null;
      writeConfig(ctx, config);
      ctx.stdout.write(`Logged out of ${profile.hub_url} (profile "${name}" removed).\n`);
    });
  },
});
