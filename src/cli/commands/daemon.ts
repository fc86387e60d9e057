import path from 'node:path';
import { defineCommand } from '../command.js';
import { usageError } from '../context.js';

export default defineCommand({
  summary: 'Run a daemon (svc daemon --help lists its environment)',
  group: 'servers',
  register(cmd, ctx) {
    cmd
      .addHelpText(
        'after',
        `
Environment:
  SVC_DAEMON_HOST    listen address (default 127.0.0.1; other hosts reach it only on a non-loopback address)
  SVC_DAEMON_PORT    port (default 4900; 0 picks a free one)
  SVC_DAEMON_HOME    data directory (default $SVC_HOME/daemon)
  SVC_HUB_URL        the hub (several URLs separated by commas fail over in order)
  SVC_REALM_TOKEN    the daemon's realm token (svc_dt_…, from \`svc realms daemon-token\`)
  SVC_LOG_LEVEL      JSON log level on stdout (default info)
Without SVC_HUB_URL and SVC_REALM_TOKEN the daemon serves its local API only (unconnected mode).
`,
      )
      .action(async () => {
        const [{ validateDaemonConfig }, { startDaemon }, { createLogger }] = await Promise.all([
          import('../../daemon/config.js'),
          import('../../daemon/main.js'),
          import('../../shared/logger.js'),
        ]);
        const { config, errors } = validateDaemonConfig(ctx.env);
        if (!config) throw usageError(`invalid daemon configuration:\n  ${errors.join('\n  ')}`);
        const log = createLogger('daemon', ctx.env.SVC_LOG_LEVEL ?? 'info');
        const daemon = await startDaemon({
          config: { ...config, home: path.resolve(ctx.cwd, config.home) },
          log,
        });
        const signal = await ctx.waitForShutdown();
        log.info({ signal }, 'daemon stopping');
        await daemon.close();
        log.info('daemon stopped');
      });
  },
});
