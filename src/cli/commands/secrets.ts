import path from 'node:path';
import { keyFilePath, rotateKeyFile } from '../../hub/secrets/keys.js';
import type { HubClient, Page } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { readStdin, usageError } from '../context.js';
import { col, time } from '../output.js';
import { resolveOrg, resolveRealm } from '../resolve.js';

interface SecretRow {
  name: string;
  realm_id: string | null;
  org_id: string;
  updated_at: number;
  updated_by: string | null;
}

type ScopeOpts = { realm?: string; org?: string };

/** `--realm` (with `--org` to find it by name) or `--org` alone. */
async function scopeOf(client: HubClient, o: ScopeOpts): Promise<{ realm_id: string } | { org_id: string }> {
  if (o.realm) return { realm_id: await resolveRealm(client, o.realm, o.org) };
  if (o.org) return { org_id: await resolveOrg(client, o.org) };
  throw usageError('give --realm (a realm secret) or --org (an organization secret)');
}

const where = (o: ScopeOpts) => (o.realm ? `realm ${o.realm}` : `organization ${o.org}`);

export default defineCommand({
  summary: 'Secrets of a realm or an organization: set, list, remove (values are never shown)',
  register(cmd, ctx) {
    cmd
      .command('set')
      .description(
        'Set a secret; the value is read from stdin (or --value, which other users of this machine may see in the process list)',
      )
      .argument('<name>', 'upper case, e.g. API_KEY')
      .option('--realm <realm>', 'realm id or name')
      .option('--org <org>', 'organization id or slug (alone: an organization secret)')
      .option('--value <value>', 'the value (prefer stdin)')
      .action(async (name: string, opts: ScopeOpts & { value?: string }, c) => {
        const s = session(ctx, c);
        const value = opts.value ?? (await readStdin(ctx, 'the secret value'));
        const reply = await s.client.call<{ data: SecretRow }>('secrets/set', {
          ...(await scopeOf(s.client, opts)),
          name,
          value,
        });
        s.print(reply, () => `Set ${name} in ${where(opts)}.\n`);
      });

    withPaging(
      cmd
        .command('list')
        .description("A realm's or an organization's secrets: names and when they changed, never values")
        .option('--realm <realm>', 'realm id or name')
        .option('--org <org>', 'organization id or slug'),
    ).action(async (opts: ScopeOpts & { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.call<Page<SecretRow>>('secrets/list', {
        ...(await scopeOf(s.client, opts)),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('NAME', 'name'),
          col('UPDATED', (r) => time(r.updated_at)),
          col('BY', (r) => r.updated_by ?? ''),
        ],
        'No secrets.',
      );
    });

    cmd
      .command('remove')
      .description('Remove a secret')
      .argument('<name>')
      .option('--realm <realm>', 'realm id or name')
      .option('--org <org>', 'organization id or slug')
      .action(async (name: string, opts: ScopeOpts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ removed: boolean }>('secrets/remove', {
          ...(await scopeOf(s.client, opts)),
          name,
        });
        s.print(reply, () => (reply.removed ? `Removed ${name}.\n` : `${name} was not set.\n`));
      });

    cmd
      .command('rotate-key')
      .description(
        "Put a fresh key first in the hub's key file ($SVC_HOME/secrets.key); the next hub start seals everything under it",
      )
      .option('--home <dir>', 'the hub home (default: $SVC_HOME, else ./.svc)')
      .action((opts: { home?: string }) => {
        if (ctx.env.SVC_SECRETS_KEY) {
          throw usageError(
            'SVC_SECRETS_KEY is set: rotate by setting a new SVC_SECRETS_KEY and the old one in SVC_SECRETS_OLD_KEYS (docs/operations.md)',
          );
        }
        const file = keyFilePath(path.resolve(ctx.cwd, opts.home ?? ctx.env.SVC_HOME ?? './.svc'));
        let keys: number;
        try {
          ({ keys } = rotateKeyFile(file));
        } catch (err) {
          throw usageError(`cannot rotate ${file}: ${(err as Error).message}`);
        }
        ctx.stdout.write(
          `Rotated ${file}: a new key is first, ${keys - 1} earlier key(s) stay for reading.\n` +
            'Restart every hub process: each seals all secrets under the new key at start.\n',
        );
      });
  },
});
