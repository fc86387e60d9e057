import { defineCommand, positiveInt, session } from '../command.js';
import { col, formatRecord, time } from '../output.js';

interface TokenRow {
  id: string;
  name: string;
  kind: string;
  hint: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
}

export default defineCommand({
  summary: 'Personal access tokens: create, list, revoke',
  register(cmd, ctx) {
    cmd
      .command('create')
      .description('Create a personal access token (the secret is shown once)')
      .argument('<name>', 'a name to recognise it by')
      .option('--expires-in-days <n>', 'expire after this many days (default: never)', positiveInt)
      .action(async (name: string, opts: { expiresInDays?: number }, c) => {
        const s = session(ctx, c);
        const reply = await s.client.call<{ data: TokenRow & { token: string } }>('tokens/create', {
          name,
          ...(opts.expiresInDays ? { expires_in_days: opts.expiresInDays } : {}),
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
        const reply = await s.client.call<{ data: TokenRow[]; next_cursor: string | null }>('tokens/list');
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
        const reply = await s.client.call('tokens/revoke', { id });
        s.print(reply, () => `Revoked token ${id}.\n`);
      });
  },
});
