import type { Command } from 'commander';
import { defineCommand, session } from '../command.js';
import { connection, profileName, saveProfile } from '../config.js';
import { readStdin, usageError } from '../context.js';
import { formatRecord, time } from '../output.js';

export default defineCommand({
  summary: 'Invitations: accept',
  register(cmd, ctx) {
    cmd
      .command('accept')
      .description(
        'Accept an invitation and print a session token: a new account sets its password (--password-stdin); ' +
          'an existing account accepts signed in (svc login first) or with its password',
      )
      .argument('<code>', 'the invitation code (svc_inv_…)')
      .option(
        '--password-stdin',
        "read the password from stdin (a new account's first password, or your account's)",
      )
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
          const profile = c.optsWithGlobals<{ profile?: string }>().profile;
          let s: ReturnType<typeof session>;
          let password: string | undefined;
          if (opts.passwordStdin) {
            password = await readStdin(ctx, 'a password');
            // The password speaks for the account; a saved token of someone else must not.
            s = session(ctx, c, opts.hub ?? connection(ctx, profile).url);
          } else if (opts.hub) {
            throw usageError(
              'without --password-stdin the invitation is accepted as the signed-in account: drop --hub (svc login, or SVC_HUB_URL and SVC_TOKEN, name the hub)',
            );
          } else {
            s = session(ctx, c);
          }
          const reply = await s.client.api.call('invites/accept', {
            code,
            ...(password !== undefined ? { password } : {}),
            ...(opts.handle ? { handle: opts.handle } : {}),
            ...(opts.displayName ? { display_name: opts.displayName } : {}),
          });
          const { user, token, expires_at } = reply.data;
          let saved = '';
          if (opts.login) {
            const name = profileName(ctx, c.optsWithGlobals<{ profile?: string }>().profile) ?? 'default';
            const { file } = saveProfile(ctx, name, {
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
