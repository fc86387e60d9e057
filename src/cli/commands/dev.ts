import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePrivateDir } from '../../shared/private-files.js';
import { ApiError, createHubClient, type HubClient, listAll } from '../client.js';
import { defineCommand, positiveInt } from '../command.js';
import { configPath, onPath, saveProfile } from '../config.js';
import { type CliContext, usageError } from '../context.js';
import type { OrgRow, RealmRow } from '../resolve.js';

/**
 * `svc dev`: a hub on embedded SQLite under ./.svc (or $SVC_HOME), seeded on first run with the
 * organization `demo`, its owner `dev@localhost` and its `default` realm, a daemon in that realm
 * (SVC_DAEMON_PORT, default 4900), and a CLI profile `dev` so that plain `svc …` commands work from
 * another terminal. Once the daemon is connected it registers the example agent and team of
 * `examples/`, installs the team on the daemon and registers the workspace `$SVC_HOME/workspace`.
 * A second run reuses everything.
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
    const r = await client.api.call('orgs/new', {
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
      await client.api.call('invites/accept', {
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
  const r = await client.api.call('realms/create_daemon_token', {
    realm_id: realmId,
    name: 'dev',
  });
  state.daemon_token = r.data.token;
  save();
  return r.data.token;
}

/** `examples/` of this package (from src/cli/commands or dist/cli/commands). */
const EXAMPLES = fileURLToPath(new URL('../../../examples/', import.meta.url));

interface Demo {
  agent: string;
  team: string;
  installed: string;
  workspace: { id: string; path: string };
}

/** Waits until the hub shows the daemon online (the hello reached it), at most `ms`. */
async function daemonOnline(client: HubClient, daemonId: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const d = await client.api.call('daemons/get', { id: daemonId });
    if (d.data.status === 'online') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the dev daemon did not come online');
}

/**
 * The example agent and team (registered with force, so a second run just refreshes them), the
 * team installed on the dev daemon and its workspace. Idempotent.
 */
async function demoContent(client: HubClient, orgId: string, daemonId: string, home: string): Promise<Demo> {
  // The default export: in dist/'s bundle a CommonJS package loaded by import() has no named ones.
  const { default: yaml } = await import('yaml');
  const manifest = yaml.parse(readFileSync(path.join(EXAMPLES, 'agents', 'hello.yaml'), 'utf8')) as Record<
    string,
    unknown
  >;
  // The agent runs in the workspace directory: point it at the script where it lives.
  manifest.command = ['node', path.join(EXAMPLES, 'agents', 'hello.mjs')];
  const agent = await client.api.call('agents/register', {
    org_id: orgId,
    manifest,
    force: true,
  });
  const team = await client.api.call('teams/register', {
    org_id: orgId,
    definition: readFileSync(path.join(EXAMPLES, 'teams', 'hello-team.yaml'), 'utf8'),
    force: true,
  });
  await daemonOnline(client, daemonId);
  const install = await client.api.call('teams/install', {
    team_version_id: team.data.id,
    daemon_id: daemonId,
  });
  const dir = path.join(home, 'workspace');
  mkdirSync(dir, { recursive: true });
  const ws = await client.api.call('workspaces/register', {
    daemon_id: daemonId,
    path: dir,
    name: 'dev',
  });
  await client.api.call('workspaces/assign_teams', {
    workspace_id: ws.data.id,
    team_ids: [team.data.team_id],
  });
  return {
    agent: `${agent.data.name}@${agent.data.version}`,
    team: `${team.data.name}@${team.data.version}`,
    installed: install.data.status,
    workspace: ws.data,
  };
}

function summary(
  ctx: CliContext,
  p: {
    url: string;
    token: string;
    home: string;
    seeded: Seeded;
    state: DevState;
    daemonUrl: string | null;
    demo: Demo | null;
    /** The current CLI profile after saving `dev`. */
    current: string;
  },
) {
  // Commands as they work when pasted: `npx svc` where no `svc` is on PATH (a checkout).
  const svc = onPath(ctx.env, 'svc') ? 'svc' : 'npx svc';
  const asDev = p.current === PROFILE ? '' : ` --profile ${PROFILE}`;
  const lines = [
    '',
    p.seeded.created ? `svc dev is running (seeded organization "${ORG}")` : 'svc dev is running',
    '',
    `  hub       ${p.url}`,
    `  console   ${p.url}/   (web console: sign in as ${OWNER_EMAIL})`,
    `  token     ${p.token}   (site administrator)`,
    `  org       ${p.seeded.org.slug} (${p.seeded.org.id})`,
    `  owner     ${OWNER_EMAIL}${p.state.owner_password ? `, password ${p.state.owner_password}` : ''}`,
    `  realm     ${p.seeded.realm ? `default (${p.seeded.realm.id})` : '-'}`,
    `  daemon    ${p.daemonUrl ?? '-'}`,
    `  agent     ${p.demo?.agent ?? '-'}`,
    `  team      ${p.demo ? `${p.demo.team} (${p.demo.installed} on daemon dev)` : '-'}`,
    `  workspace ${p.demo ? `${p.demo.workspace.path} (${p.demo.workspace.id})` : '-'}`,
    `  data      ${p.home}`,
    `  profile   "${PROFILE}" in ${configPath(ctx)}`,
    ...(p.current === PROFILE
      ? []
      : [
          `            (profile "${p.current}" stays current: \`${svc} profile use ${PROFILE}\` switches, or add --profile ${PROFILE})`,
        ]),
    '',
    'Try next, in another terminal:',
    ...[
      'whoami',
      'orgs list',
      `realms list --org ${ORG}`,
      `orgs members ${ORG}`,
      `realms daemon-token default my-laptop --org ${ORG}`,
      `agents list --org ${ORG}`,
      `teams installs --daemon dev --org ${ORG}`,
      `workspaces list --org ${ORG}`,
      ...(p.demo
        ? [`runs start ${p.demo.team} --workspace ${p.demo.workspace.id} --input name=you --watch`]
        : []),
    ].map((c) => `  ${svc}${asDev} ${c}`),
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
        ensurePrivateDir(home);
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
          let demo: Demo | null = null;
          if (daemon?.link) {
            if (!daemon.link.connected) {
              await once(daemon.link, 'connected', { signal: AbortSignal.timeout(15_000) });
            }
            demo = await demoContent(client, seeded.org.id, daemon.daemonId()!, home);
          }

          // Another current profile (a real hub you signed in to) stays current.
          const { current } = saveProfile(
            ctx,
            PROFILE,
            { hub_url: running.url, token, token_kind: 'personal', who: 'admin <admin@localhost>' },
            { keepCurrent: true },
          );
          summary(ctx, { url: running.url, token, home, seeded, state, daemonUrl, demo, current });
          await ctx.waitForShutdown();
          ctx.stdout.write('Stopping…\n');
        } finally {
          await daemon?.close();
          await running.close();
        }
      });
  },
});
