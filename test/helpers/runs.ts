import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Hub } from '../../src/hub/context.js';
import type { StartHubOptions } from '../../src/hub/server.js';
import { startTestHub, type TestHub } from './hub.js';
import { buildWorld, type World } from './world.js';

/** A directory of agent scripts written by a test (CommonJS, run with `node`). */
export function agentDir(): { dir: string; write(name: string, source: string): string; cleanup(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-agents-'));
  return {
    dir,
    write(name, source) {
      const file = path.join(dir, `${name}.cjs`);
      writeFileSync(file, source);
      return file;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Registers an exec agent running `node <script>`. */
export async function registerAgent(
  h: TestHub,
  orgId: string,
  name: string,
  script: string,
  extra: Record<string, unknown> = {},
) {
  const r = await h.ok('agents/register', {
    org_id: orgId,
    manifest: { name, version: '1.0.0', agent_type: 'exec', command: [process.execPath, script], ...extra },
  });
  return r.data;
}

/**
 * Registers a team version and, unless `allow` is false, lets the org's daemons and workspaces run
 * it (`allowOrgTeams`): a run goes only where its team is installed and assigned.
 */
export async function registerTeam(
  h: TestHub,
  orgId: string,
  name: string,
  phases: unknown[],
  opts: { version?: string; allow?: boolean } = {},
) {
  const r = await h.ok('teams/register', {
    org_id: orgId,
    definition: { name, version: opts.version ?? '1.0.0', phases },
  });
  if (opts.allow !== false) await allowOrgTeams(h, orgId);
  return r.data;
}

/**
 * A test hub with a world (test/helpers/world.ts) and a one-phase team `team` of a no-op agent. No
 * daemon: its runs stay queued.
 */
export async function hubWithTeam(
  team: string,
  opts: Partial<StartHubOptions> = {},
): Promise<{ h: TestHub; w: World }> {
  const h = await startTestHub(opts);
  const w = await buildWorld(h);
  await registerAgent(h, w.orgId, 'noop', 'noop.js');
  await registerTeam(h, w.orgId, team, [{ name: 'only', agent: 'noop' }]);
  return { h, w };
}

/**
 * A team version installed on a daemon, as `teams/install` leaves it once the daemon confirmed it,
 * written directly (no command reaches the daemon). Already installed: nothing changes.
 */
export async function markInstalled(
  h: TestHub | Hub,
  daemon: { id: string; realm_id: string },
  version: { id: string; team_id: string },
): Promise<void> {
  const hub = 'running' in h ? h.running.hub : h;
  const at = Date.now();
  await hub.db
    .insertInto('team_installs')
    .values({
      id: hub.newId(),
      daemon_id: daemon.id,
      realm_id: daemon.realm_id,
      team_version_id: version.id,
      team_id: version.team_id,
      status: 'installed',
      pending_action: null,
      pending_tx_id: null,
      last_error: null,
      installed_at: at,
      uninstalled_at: null,
      created_at: at,
      updated_at: at,
    })
    .onConflict((oc) => oc.columns(['daemon_id', 'team_version_id']).doNothing())
    .execute();
}

/**
 * Every team version of the org installed on every daemon of its realms, and every team assigned to
 * every workspace there: the hub's rows as `teams/install` (once the daemon confirmed it) and
 * `workspaces/assign_teams` leave them, written directly so that a test's daemon (real, or a tunnel
 * the test acks by hand) gets no extra command. Call again after adding a daemon or a workspace.
 */
export async function allowOrgTeams(h: TestHub | Hub, orgId: string): Promise<void> {
  const hub = 'running' in h ? h.running.hub : h;
  const db = hub.db;
  const realms = (await db.selectFrom('realms').select('id').where('org_id', '=', orgId).execute()).map(
    (r) => r.id,
  );
  if (realms.length === 0) return;
  const versions = await db
    .selectFrom('team_versions')
    .select(['id', 'team_id'])
    .where('org_id', '=', orgId)
    .execute();
  const daemons = await db
    .selectFrom('daemons')
    .select(['id', 'realm_id'])
    .where('realm_id', 'in', realms)
    .where('revoked_at', 'is', null)
    .execute();
  const now = Date.now();
  for (const d of daemons) for (const v of versions) await markInstalled(hub, d, v);
  const teamIds = JSON.stringify([...new Set(versions.map((v) => v.team_id))]);
  await db
    .updateTable('workspaces')
    .set({ team_ids: teamIds, updated_at: now })
    .where('realm_id', 'in', realms)
    .execute();
}

/**
 * Polls `runs/get_by_id` until `done(run)` holds (no event exists for a client to await); a bounded
 * loop on a real condition. Fails with the last run seen.
 */
export async function waitForRun(
  h: TestHub,
  runId: string,
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  done: (run: any) => boolean,
  timeoutMs = 20_000,
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  let last: any = null;
  while (Date.now() < deadline) {
    last = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`run ${runId} did not reach the expected state; last: ${JSON.stringify(last)}`);
}

export const ended = (run: { state: string }) =>
  ['succeeded', 'failed', 'cancelled', 'terminated', 'lost'].includes(run.state);

/** The types of a run's history entries, oldest first, read from the hub's database. */
export async function historyTypes(hub: Hub, runId: string): Promise<string[]> {
  const rows = await hub.db
    .selectFrom('run_history')
    .select('type')
    .where('run_id', '=', runId)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.type);
}

/** Counts the statements `matches` picks among those run at the hub's handle while `fn` runs. */
export async function countingQueries<T>(
  hub: Hub,
  matches: (query: { sql: string; parameters: readonly unknown[] }) => boolean,
  fn: (count: () => number) => Promise<T>,
): Promise<T> {
  const executor = hub.db.getExecutor();
  const execute = executor.executeQuery.bind(executor);
  let n = 0;
  executor.executeQuery = ((...args: Parameters<typeof execute>) => {
    if (matches(args[0])) n++;
    return execute(...args);
  }) as typeof executor.executeQuery;
  try {
    return await fn(() => n);
  } finally {
    executor.executeQuery = execute;
  }
}
