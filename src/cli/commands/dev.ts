import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApiError, createHubClient, type HubClient, listAll } from '../client.js';
import { defineCommand, positiveInt } from '../command.js';
import { configPath, saveProfile } from '../config.js';
import { type CliContext, usageError } from '../context.js';
import type { OrgRow, RealmRow } from '../resolve.js';

/**
 * `svc dev`: a hub on embedded SQLite under ./.svc (or $SVC_HOME), seeded on first run with the
 * organization `demo`, its owner `dev@localhost` and its `default` realm, a daemon in that realm
 * (SVC_DAEMON_PORT, default 4900), and a CLI profile `dev` so that plain `svc …` commands work from
 * another terminal. A second run reuses everything.
 */
const ORG = 'demo';
const OWNER_EMAIL = 'dev@localhost';
const PROFILE = 'dev';

/** What a later run needs: `$SVC_HOME/dev.json`, mode 0600 (it holds the admin token). */
interface DevState {
  admin_token?: string;
  owner_password?: string;
  /** The dev daemon's realm token (svc_dt_…) in the default realm. */
  daemon_token?: string;
}

function readState(file: string): DevState {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DevState;
  } catch {
    return {};
  }
}

function writeState(file: string, state: DevState): void {
  writeFileSync(file, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

interface Seeded {
  org: OrgRow;
  realm: RealmRow | undefined;
  created: boolean;
}

/** Creates the demo organization and accepts its owner's invitation, unless it exists. */
async function seed(client: HubClient, state: DevState, save: () => void): Promise<Seeded> {
  let org = (await listAll<OrgRow>(client, 'orgs/list')).find((o) => o.slug === ORG);
  let created = false;
  if (!org) {
    const r = await client.call<{ data: { org: OrgRow; owner_invite: { code?: string } } }>('orgs/new', {
      slug: ORG,
      display_name: 'Demo',
      owner: { email: OWNER_EMAIL, display_name: 'Developer' },
      reactivate: true,
    });
    org = r.data.org;
    created = true;
    if (r.data.owner_invite.code) {
      state.owner_password ??= randomBytes(12).toString('base64url');
      save();
      await client.call('invites/accept', {
        code: r.data.owner_invite.code,
        password: state.owner_password,
        handle: 'dev',
      });
    }
  }
  const realms = await listAll<RealmRow>(client, 'realms/list', { org_id: org.id });
  return { org, realm: realms.find((r) => r.name === 'default'), created };
}

/** The saved realm token while the hub still accepts it; else a new daemon in the default realm. */
async function daemonToken(
  client: HubClient,
  realmId: string,
  state: DevState,
  save: () => void,
  fetchFn: typeof fetch,
): Promise<string> {
  if (state.daemon_token) {
    const saved = createHubClient({ url: client.url, token: state.daemon_token, fetch: fetchFn });
    const valid = await saved.call('auth/whoami').then(
      () => true,
      (err: unknown) => {
        if (err instanceof ApiError && err.code === 'unauthorized') return false;
        throw err;
      },
    );
    if (valid) return state.daemon_token;
  }
  const r = await client.call<{ data: { token: string } }>('realms/create_daemon_token', {
    realm_id: realmId,
    name: 'dev',
  });
  state.daemon_token = r.data.token;
  save();
  return r.data.token;
}

function summary(
  ctx: CliContext,
  p: { url: string; token: string; home: string; seeded: Seeded; state: DevState; daemonUrl: string | null },
) {
  const lines = [
    '',
    p.seeded.created ? `svc dev is running (seeded organization "${ORG}")` : 'svc dev is running',
    '',
    `  hub       ${p.url}`,
    `  token     ${p.token}   (site administrator)`,
    `  org       ${p.seeded.org.slug} (${p.seeded.org.id})`,
    `  owner     ${OWNER_EMAIL}${p.state.owner_password ? `, password ${p.state.owner_password}` : ''}`,
    `  realm     ${p.seeded.realm ? `default (${p.seeded.realm.id})` : '-'}`,
    `  daemon    ${p.daemonUrl ?? '-'}`,
    `  data      ${p.home}`,
    `  profile   "${PROFILE}" in ${configPath(ctx)}`,
    '',
    'Try next, in another terminal:',
    '  svc whoami',
    '  svc orgs list',
    `  svc realms list --org ${ORG}`,
    `  svc orgs members ${ORG}`,
    `  svc realms daemon-token default my-laptop --org ${ORG}`,
    '',
    'Press Ctrl-C to stop.',
    '',
  ];
  ctx.stdout.write(lines.join('\n'));
}

export default defineCommand({
  summary: 'The one-command demo: hub, daemon and a seeded org in ./.svc',
  group: 'servers',
  register(cmd, ctx) {
    cmd
      .option('--port <port>', 'hub port (default SVC_HUB_PORT or 4800; 0 picks a free one)', (v) =>
        v === '0' ? 0 : positiveInt(v),
      )
      .action(async (opts: { port?: number }) => {
        const [
          { validateHubConfig },
          { launchHub },
          { createLogger },
          { mintToken },
          daemonConfig,
          daemonMain,
        ] = await Promise.all([
          import('../../config/hub.js'),
          import('../../hub/main.js'),
          import('../../shared/logger.js'),
          import('../../shared/tokens.js'),
          import('../../daemon/config.js'),
          import('../../daemon/main.js'),
        ]);
        const home = path.resolve(ctx.cwd, ctx.env.SVC_HOME ?? '.svc');
        mkdirSync(home, { recursive: true });
        const stateFile = path.join(home, 'dev.json');
        const state = readState(stateFile);
        const save = () => writeState(stateFile, state);
        const token = ctx.env.SVC_ADMIN_TOKEN ?? state.admin_token ?? mintToken('user');
        if (state.admin_token !== token) {
          state.admin_token = token;
          save();
        }
        const { config, errors } = validateHubConfig({
          ...ctx.env,
          SVC_HOME: home,
          SVC_DATABASE_URL: path.join(home, 'hub.db'),
          SVC_ADMIN_TOKEN: token,
          ...(opts.port !== undefined ? { SVC_HUB_PORT: String(opts.port) } : {}),
        });
        if (!config) throw usageError(`invalid configuration:\n  ${errors.join('\n  ')}`);
        // Warnings only, so that the terminal stays readable (SVC_LOG_LEVEL=info shows the JSON logs).
        const log = createLogger('hub', ctx.env.SVC_LOG_LEVEL ?? 'warn');
        const running = await launchHub(config, { log, cwd: ctx.cwd });
        let daemon: Awaited<ReturnType<typeof daemonMain.startDaemon>> | null = null;
        try {
          const client = createHubClient({ url: running.url, token, fetch: ctx.fetch });
          const seeded = await seed(client, state, save);

          // The daemon: in the default realm, connected to this hub, data under $SVC_HOME/daemon.
          if (seeded.realm) {
            const realmToken = await daemonToken(client, seeded.realm.id, state, save, ctx.fetch);
            const d = daemonConfig.validateDaemonConfig({
              ...ctx.env,
              SVC_HOME: home,
              SVC_HUB_URL: running.url,
              SVC_REALM_TOKEN: realmToken,
            });
            if (!d.config) throw usageError(`invalid daemon configuration:\n  ${d.errors.join('\n  ')}`);
            daemon = await daemonMain.startDaemon({
              config: { ...d.config, home: path.resolve(ctx.cwd, d.config.home) },
              log: createLogger('daemon', ctx.env.SVC_LOG_LEVEL ?? 'warn'),
            });
          }
          const daemonUrl = daemon?.url ?? null;

          saveProfile(ctx, PROFILE, {
            hub_url: running.url,
            token,
            token_kind: 'personal',
            who: 'admin <admin@localhost>',
          });
          summary(ctx, { url: running.url, token, home, seeded, state, daemonUrl });
          await ctx.waitForShutdown();
          ctx.stdout.write('Stopping…\n');
        } finally {
          await daemon?.close();
          await running.close();
        }
      });
  },
});
