import type { Command } from 'commander';
import { createHubClient } from '../client.js';
import { defineCommand } from '../command.js';
import { DEFAULT_HUB_URL, type Profile, profileName, readConfig, saveProfile } from '../config.js';
import { readStdin, usageError } from '../context.js';
import type { UserOut, WhoamiReply } from './whoami.js';

export default defineCommand({
  summary: 'Sign in to a hub and save the profile for later commands',
  register(cmd, ctx) {
    cmd
      .option('--hub <url>', `hub URL (default: SVC_HUB_URL, the saved profile, or ${DEFAULT_HUB_URL})`)
      .option('--token <token>', 'a personal access token (svc_tok_…)')
      .option('--email <email>', 'sign in with e-mail and password (read from stdin)')
      .option('--password-stdin', 'read the password from stdin')
      .addHelpText(
        'after',
        '\nExamples:\n  svc login --hub http://hub:4800 --token svc_tok_…\n  echo "$PW" | svc login --email ada@example.com --password-stdin\n',
      )
      .action(
        async (
          opts: { hub?: string; token?: string; email?: string; passwordStdin?: boolean },
          c: Command,
        ) => {
          const globals = c.optsWithGlobals<{ profile?: string; json?: boolean }>();
          const name = profileName(ctx, globals.profile) ?? 'default';
          const saved = readConfig(ctx).profiles[name];
          const url = opts.hub ?? ctx.env.SVC_HUB_URL?.split(',')[0] ?? saved?.hub_url ?? DEFAULT_HUB_URL;
          if (opts.token && opts.email) throw usageError('give either --token or --email, not both');
          let token: string;
          let kind: Profile['token_kind'];
          if (opts.token) {
            token = opts.token;
            kind = 'personal';
          } else if (opts.email) {
            if (!opts.passwordStdin) throw usageError('--email needs --password-stdin');
            const password = await readStdin(ctx, 'a password');
            const anon = createHubClient({ url, fetch: ctx.fetch });
            const r = await anon.call<{ data: { token: string } }>('auth/sign_in', {
              email: opts.email,
              password,
            });
            token = r.data.token;
            kind = 'session';
          } else {
            throw usageError('give --token TOKEN, or --email EMAIL --password-stdin');
          }
          const who = await createHubClient({ url, token, fetch: ctx.fetch }).call<WhoamiReply>(
            'auth/whoami',
          );
          const u: UserOut | null = who.data.user;
          const label = u ? `${u.handle} <${u.email}>` : `daemon ${who.data.daemon?.name}`;
          const { file } = saveProfile(ctx, name, { hub_url: url, token, token_kind: kind, who: label });
          ctx.stdout.write(
            globals.json
              ? `${JSON.stringify({ ok: true, profile: name, hub_url: url, file, whoami: who.data }, null, 2)}\n`
              : `Logged in to ${url} as ${label}; saved profile "${name}" in ${file}\n`,
          );
        },
      );
  },
});
