/**
 * Child process: one real daemon (`startDaemon`, as `svc daemon` composes it) connected to the hub
 * named in `SVC_BENCH_DAEMON` (JSON: home, hubUrls, realmToken), logs silenced. Ready once its
 * tunnel has the hub's hello, so runs can be dispatched to it.
 */
import { startDaemon } from '../../src/daemon/main.js';
import { createLogger } from '../../src/shared/logger.js';
import { serveParent } from './child.js';

const opts = JSON.parse(process.env.SVC_BENCH_DAEMON ?? '{}') as {
  home: string;
  hubUrls: string[];
  realmToken: string;
};
const daemon = await startDaemon({
  config: { home: opts.home, host: '127.0.0.1', port: 0, hubUrls: opts.hubUrls, realmToken: opts.realmToken },
  log: createLogger('daemon', 'silent'),
});
const link = daemon.link!;
await new Promise<void>((resolve) => (link.connected ? resolve() : link.once('connected', () => resolve())));
serveParent({ url: daemon.url, daemon_id: daemon.daemonId() }, {}, () => daemon.close());
