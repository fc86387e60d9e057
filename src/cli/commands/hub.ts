import { defineCommand } from '../command.js';
import { usageError } from '../context.js';

export default defineCommand({
  summary: 'Run the hub (svc hub --help lists its environment)',
  group: 'servers',
  register(cmd, ctx) {
    cmd
      .addHelpText(
        'after',
        `
Environment:
  SVC_HUB_HOST       listen address (default 127.0.0.1)
  SVC_HUB_PORT       port (default 4800; 0 picks a free one)
  SVC_HOME           data directory (default ./.svc)
  SVC_DATABASE_URL   postgres://… for PostgreSQL (default: SQLite file $SVC_HOME/hub.db)
  SVC_ADMIN_TOKEN    a svc_tok_… token the site administrator "admin" holds
  SVC_PUBLIC_URL     the hub's URL as others reach it (in invitation e-mails)
  SVC_SMTP_URL       smtp://… to send invitation e-mails (SVC_SMTP_FROM sets the sender)
  SVC_LOG_LEVEL      JSON log level on stdout (default info)
`,
      )
      .action(async () => {
        const { runHub, HubConfigError } = await import('../../hub/main.js');
        try {
          await runHub(ctx.env, { shutdown: ctx.waitForShutdown(), cwd: ctx.cwd, stderr: ctx.stderr });
        } catch (err) {
          if (err instanceof HubConfigError) {
            throw usageError(`invalid hub configuration:\n  ${err.errors.join('\n  ')}`);
          }
          throw err;
        }
      });
  },
});
