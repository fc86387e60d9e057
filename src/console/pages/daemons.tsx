import { listAll } from '../api.js';
import { shortId } from '../format.js';
import { useLive, useNow } from '../live.js';
import { useScope } from '../scope.js';
import type { Daemon, TeamInstall, TeamVersion, Workspace } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonBlock } from '../ui.js';

interface DaemonView {
  daemon: Daemon;
  installs: TeamInstall[];
  workspaces: Workspace[];
}

/**
 * The realm's daemons: online or not, last seen, and what may run where (docs/api.md, "Where a run
 * may go"): the team versions installed on each daemon, and the teams each workspace runs; every 5 s.
 */
export function DaemonsPage() {
  const { realm, org } = useScope();
  const now = useNow(5000);
  const teams = useLive(
    async () => {
      if (!org) return new Map<string, string>();
      const list = await listAll<'teams/list', TeamVersion>('teams/list', { org_id: org.id }, 4);
      const names = new Map<string, string>();
      for (const t of list) {
        names.set(t.id, `${t.name}@${t.version}`);
        if (!names.has(t.team_id)) names.set(t.team_id, t.name);
      }
      return names;
    },
    [org?.id],
    null,
  );
  const data = useLive(
    async (): Promise<DaemonView[] | null> => {
      if (!realm) return null;
      const [daemons, installs, workspaces] = await Promise.all([
        listAll<'daemons/list', Daemon>('daemons/list', { realm_id: realm.id }),
        listAll<'teams/list_installs', TeamInstall>('teams/list_installs', { realm_id: realm.id }),
        listAll<'workspaces/list', Workspace>('workspaces/list', { realm_id: realm.id }),
      ]);
      return daemons.map((d) => ({
        daemon: d,
        installs: installs.filter((i) => i.daemon_id === d.id && i.status !== 'uninstalled'),
        workspaces: workspaces.filter((w) => w.daemon_id === d.id),
      }));
    },
    [realm?.id],
    5000,
  );
  const name = (id: string) => teams.data?.get(id) ?? shortId(id);
  return (
    <>
      <PageTitle>Daemons</PageTitle>
      <p class="note">
        A daemon runs only the team versions installed on it: a run with no workspace waits for an online
        daemon that has its team version. A run in a workspace also needs its team assigned to that workspace.
      </p>
      <ErrorNote error={data.error} what="Could not load the daemons" />
      {data.data === undefined ? <SkeletonBlock lines={6} /> : null}
      {data.data?.length === 0 ? (
        <Empty>
          No daemon in this realm. Create one with <code>svc realms daemon-token</code> and start{' '}
          <code>svc daemon</code>.
        </Empty>
      ) : null}
      <div class="cards">
        {data.data?.map(({ daemon: d, installs, workspaces }) => (
          <article class="card daemon" key={d.id} aria-labelledby={`d-${d.id}`}>
            <header>
              <h2 id={`d-${d.id}`}>{d.name}</h2>
              <span class={`badge status-${d.status}`}>
                <span class="dot" aria-hidden="true" />
                {d.status}
              </span>
            </header>
            <dl class="facts">
              <div>
                <dt>Last seen</dt>
                <dd>{d.status === 'online' ? 'now' : <Ago at={d.last_seen_at} now={now} />}</dd>
              </div>
              <div>
                <dt>Id</dt>
                <dd>
                  <code title={d.id}>{shortId(d.id)}</code>
                </dd>
              </div>
            </dl>
            <h3>Installed teams (may run here)</h3>
            {installs.length === 0 ? (
              <p class="muted">
                none: it runs nothing. <code>svc teams install TEAM --daemon {d.name}</code>
              </p>
            ) : (
              <ul class="chips">
                {installs.map((i) => (
                  <li key={i.id} title={i.error ? `${i.error.code}: ${i.error.message}` : undefined}>
                    {name(i.team_version_id)}
                    {i.status !== 'installed' || i.pending ? (
                      <span class="muted"> ({i.pending ? 'pending' : i.status})</span>
                    ) : null}
                  </li>
                ))}
              </ul>
            )}
            <h3>Workspaces</h3>
            {workspaces.length === 0 ? (
              <p class="muted">none</p>
            ) : (
              <ul class="plain">
                {workspaces.map((w) => (
                  <li key={w.id}>
                    <strong>{w.name}</strong> <code class="path">{w.path}</code>
                    <span class="muted">
                      {' '}
                      ·{' '}
                      {w.team_ids.length
                        ? `runs: ${w.team_ids.map((t) => name(t)).join(', ')}`
                        : 'runs no team (svc workspaces assign-teams)'}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </article>
        ))}
      </div>
    </>
  );
}
