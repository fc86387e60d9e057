import type { Command } from 'commander';
import { ApiError, createHubClient } from '../client.js';
import { defineCommand, positiveInt, session } from '../command.js';
import { type CliContext, CliError, readStdin, usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';

const DEFAULT_DAEMON_URL = 'http://127.0.0.1:4900';
const DAY = 24 * 60 * 60 * 1000;

interface CreateOptions {
  expiresInDays?: number;
  passwordStdin?: boolean;
  local?: boolean;
  daemon?: string;
}

/**
 * `svc tokens create --local`: the daemon's `POST /v1/tokens/create`, which only a caller on the
 * daemon's own machine may use. The token lets another host call the daemon while it is not
 * connected to a hub.
 */
async function createLocal(ctx: CliContext, c: Command, opts: CreateOptions): Promise<void> {
  const url = opts.daemon ?? ctx.env.SVC_DAEMON_URL ?? DEFAULT_DAEMON_URL;
  if (opts.expiresInDays !== undefined && opts.expiresInDays > 30) {
    throw usageError('--expires-in-days: a local token lives at most 30 days');
  }
  const json = c.optsWithGlobals<{ json?: boolean }>().json === true;
  const daemon = createHubClient({ url, fetch: ctx.fetch, server: 'daemon' });
  let reply: { data: { token: string; expires_at: number } };
  try {
    reply = await daemon.call('tokens/create', {
      ...(opts.expiresInDays ? { ttl_ms: opts.expiresInDays * DAY } : {}),
    });
  } catch (err) {
    if (err instanceof CliError && !(err instanceof ApiError)) {
      throw new CliError(
        `${err.message}; is \`svc daemon\` running? (--daemon URL or SVC_DAEMON_URL)`,
        err.exitCode,
        err.code,
      );
    }
    throw err;
  }
  ctx.stdout.write(
    json
      ? `${JSON.stringify(reply, null, 2)}\n`
      : formatRecord([
          ['token', reply.data.token],
          ['expires', time(reply.data.expires_at)],
        ]).concat(
          'The token is shown only this once. Another host may use it as a bearer token while the daemon is not connected to a hub.\n',
        ),
  );
}

export default defineCommand({
  summary: 'Personal access tokens: create, list, revoke',
  register(cmd, ctx) {
    cmd
      .command('create')
      .description(
        'Create a personal access token on the hub, or with --local a local token on this machine’s daemon (the secret is shown once)',
      )
      .argument('[name]', 'a name to recognise it by (hub tokens)')
      .option(
        '--expires-in-days <n>',
        'expire after this many days (hub default: never, but never after the session used; --local: default 1, at most 30)',
        positiveInt,
      )
      .option(
        '--password-stdin',
        'read your password from stdin: a token created while signed in (a session) may then outlive the session',
      )
      .option('--local', 'ask the daemon on this machine for a local token (svc_lt_…), not the hub')
      .option(
        '--daemon <url>',
        `the local daemon (with --local; default $SVC_DAEMON_URL or ${DEFAULT_DAEMON_URL})`,
      )
      .action(async (name: string | undefined, opts: CreateOptions, c) => {
        if (opts.local) return createLocal(ctx, c, opts);
        if (opts.daemon) throw usageError('--daemon goes with --local');
        if (!name) throw usageError('missing argument: name (or --local for a daemon token)');
        const password = opts.passwordStdin ? await readStdin(ctx, 'your password') : undefined;
        const s = session(ctx, c);
        const reply = await s.client.api.call('tokens/create', {
          name,
          ...(opts.expiresInDays ? { expires_in_days: opts.expiresInDays } : {}),
          ...(password !== undefined ? { password } : {}),
        });
        s.print(reply, () =>
          formatRecord([
            ['token', reply.data.token],
            ['id', reply.data.id],
            ['name', reply.data.name],
            ['expires', time(reply.data.expires_at)],
          ]).concat('The token is shown only this once.\n'),
        );
      });
    cmd
      .command('list')
      .description('Your live tokens (never their secrets)')
      .action(async (_opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('tokens/list');
        s.printPage(
          reply,
          [
            col('ID', 'id'),
            col('NAME', 'name'),
            col('KIND', 'kind'),
            col('HINT', 'hint'),
            col('CREATED', (t) => time(t.created_at)),
            col('EXPIRES', (t) => time(t.expires_at)),
            col('LAST USED', (t) => time(t.last_used_at)),
          ],
          'No tokens.',
        );
      });
    cmd
      .command('revoke')
      .description('Revoke one of your tokens')
      .argument('<id>', 'token id (see svc tokens list)')
      .action(async (id: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('tokens/revoke', { id });
        s.print(reply, () => `Revoked token ${id}.\n`);
      });
  },
});
