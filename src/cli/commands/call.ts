import { defineCommand, session } from '../command.js';
import { readStdin, usageError } from '../context.js';

export default defineCommand({
  summary: 'Call any hub operation and print the raw reply',
  register(cmd, ctx) {
    cmd
      .argument('<op>', 'operation name, e.g. orgs/list')
      .argument('[json]', 'request body as JSON (default {}); "-" reads it from stdin')
      .action(async (op: string, json: string | undefined, _opts, c) => {
        const text = json === '-' ? await readStdin(ctx, 'a JSON body') : (json ?? '{}');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch (err) {
          throw usageError(`the body is not valid JSON: ${(err as Error).message}`);
        }
        const s = session(ctx, c);
        const reply = await s.client.call(op.replace(/^\/?(v1\/)?/, ''), body);
        ctx.stdout.write(`${JSON.stringify(reply, null, 2)}\n`);
      });
  },
});
