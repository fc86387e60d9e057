import { listAll } from '../api.js';
import { useLive, useNow } from '../live.js';
import { useScope } from '../scope.js';
import type { Agent, TeamVersion } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonBlock } from '../ui.js';

/** Groups versions by name; the API lists them by name, newest version first. */
export function byName<T extends { name: string }>(list: readonly T[]): [string, T[]][] {
  const groups = new Map<string, T[]>();
  for (const x of list) {
    const g = groups.get(x.name);
    if (g) g.push(x);
    else groups.set(x.name, [x]);
  }
  return [...groups.entries()];
}

/** The organization's agents and teams with their versions. */
export function CatalogPage() {
  const { org } = useScope();
  const now = useNow(60_000);
  const data = useLive(
    async () => {
      if (!org) return null;
      const [agents, teams] = await Promise.all([
        listAll<'agents/list', Agent>('agents/list', { org_id: org.id }),
        listAll<'teams/list', TeamVersion>('teams/list', { org_id: org.id }),
      ]);
      return { agents: byName(agents), teams: byName(teams) };
    },
    [org?.id],
    null,
  );
  return (
    <>
      <PageTitle>Catalog</PageTitle>
      <ErrorNote error={data.error} what="Could not load the catalog" />
      <section aria-labelledby="teams-h">
        <h2 id="teams-h">Teams</h2>
        {data.data === undefined ? <SkeletonBlock lines={4} /> : null}
        {data.data?.teams.length === 0 ? (
          <Empty>
            No teams yet: <code>svc teams register team.yaml</code>.
          </Empty>
        ) : null}
        <div class="cards">
          {data.data?.teams.map(([name, versions]) => {
            const latest = versions[0]!;
            return (
              <article class="card" key={name} aria-labelledby={`t-${latest.team_id}`}>
                <header>
                  <h3 id={`t-${latest.team_id}`}>{name}</h3>
                  <span class="badge">{latest.version}</span>
                </header>
                {latest.description ? <p>{latest.description}</p> : null}
                <ol class="phases">
                  {latest.definition.phases.map((p) => (
                    <li key={p.name}>
                      <strong>{p.name}</strong>{' '}
                      <span class="muted">
                        {p.agent ? `agent ${p.agent}` : p.team ? `team ${p.team}` : ''}
                        {p.foreach ? ` · foreach ${p.foreach}` : ''}
                        {p.review ? ' · review' : ''}
                      </span>
                    </li>
                  ))}
                </ol>
                <p class="versions">
                  Versions:{' '}
                  {versions.map((v, i) => (
                    <span key={v.id}>
                      {i > 0 ? ', ' : ''}
                      <span title={`registered ${new Date(v.created_at).toISOString()}`}>{v.version}</span>
                    </span>
                  ))}
                </p>
              </article>
            );
          })}
        </div>
      </section>
      <section aria-labelledby="agents-h">
        <h2 id="agents-h">Agents</h2>
        {data.data === undefined ? <SkeletonBlock lines={4} /> : null}
        {data.data?.agents.length === 0 ? (
          <Empty>
            No agents yet: <code>svc agents register agent.yaml</code>.
          </Empty>
        ) : null}
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Versions</th>
                <th scope="col">Type</th>
                <th scope="col" class="hide-narrow">
                  Description
                </th>
                <th scope="col">Latest registered</th>
              </tr>
            </thead>
            <tbody>
              {data.data?.agents.map(([name, versions]) => (
                <tr key={name}>
                  <td>
                    <strong>{name}</strong>
                  </td>
                  <td>{versions.map((v) => v.version).join(', ')}</td>
                  <td>{versions[0]!.agent_type}</td>
                  <td class="hide-narrow">{versions[0]!.description}</td>
                  <td>
                    <Ago at={versions[0]!.created_at} now={now} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}
