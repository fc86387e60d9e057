import type { Command } from 'commander';
import { defineCommand, session } from '../command.js';
import { profileName, saveProfile } from '../config.js';
import { readStdin, usageError } from '../context.js';
import { formatRecord, time } from '../output.js';
import type { UserOut } from './whoami.js';

export default defineCommand({
  summary: 'Invitations: accept',
  register(cmd, ctx) {
    cmd
      .command('accept')
      .description('Accept an invitation; sets your password and prints a session token')
      .argument('<code>', 'the invitation code (svc_inv_…)')
      .option('--password-stdin', 'read the new password from stdin')
      .option('--handle <handle>', 'your handle (default: from your e-mail address)')
      .option('--display-name <name>', 'your display name')
      .option('--hub <url>', 'the hub that sent the invitation (default: SVC_HUB_URL or the saved profile)')
      .option('--login', 'save the session as the current profile')
      .action(
        async (
          code: string,
          opts: {
            passwordStdin?: boolean;
            handle?: string;
            displayName?: string;
            hub?: string;
            login?: boolean;
          },
          c: Command,
        ) => {
          if (!opts.passwordStdin) throw usageError('give --password-stdin and your new password on stdin');
          const password = await readStdin(ctx, 'a password');
          const s = session(ctx, c, opts.hub);
          const reply = await s.client.call<{ data: { token: string; expires_at: number; user: UserOut } }>(
            'invites/accept',
            {
              code,
              password,
              ...(opts.handle ? { handle: opts.handle } : {}),
              ...(opts.displayName ? { display_name: opts.displayName } : {}),
            },
          );
          const { user, token, expires_at } = reply.data;
          let saved = '';
          if (opts.login) {
            const name = profileName(ctx, c.optsWithGlobals<{ profile?: string }>().profile) ?? 'default';
            const file = saveProfile(ctx, name, {
              hub_url: s.client.url,
              token,
              token_kind: 'session',
              who: `${user.handle} <${user.email}>`,
            });
            saved = `Logged in; saved profile "${name}" in ${file}\n`;
          }
          s.print(reply, () =>
            formatRecord([
              ['user', user.handle],
              ['email', user.email],
              ['token', token],
              ['expires', time(expires_at)],
            ]).concat(
              saved ||
                `Log in with:\n  svc login --hub ${s.client.url} --email ${user.email} --password-stdin\n`,
            ),
          );
        },
      );
  },
});
