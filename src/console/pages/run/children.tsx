import { useMemo, useState } from 'preact/hooks';
import { listAll } from '../../api.js';
import { formatDuration, humanize, runDuration } from '../../format.js';
import { realmRunsStream, useLive } from '../../live.js';
import { formatRoute } from '../../router.js';
import { buildRunTree, countStates, descendantsOf, flattenTree } from '../../tree.js';
import type { Run } from '../../types.js';
import { StateBadge } from '../../ui.js';

/** A run's child runs as a tree (foreach iterations and nested teams). */

export function ChildRuns({ run, live, now }: { run: Run; live: boolean; now: number }) {
  const root = run.root_run_id ?? run.run_id;
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const runs = useLive(
    () => listAll<'runs/list', Run>('runs/list', { realm_id: run.realm_id, root_run_id: root }, 4),
    [root, run.realm_id],
    live ? 2000 : null,
    // The realm's changes of runs of this tree only: a busy realm's other runs read nothing here.
    live ? realmRunsStream(run.realm_id, (r) => r.run_id === root || r.root_run_id === root) : null,
  );
  const tree = useMemo(() => {
    if (!runs.data) return null;
    const below = root === run.run_id ? runs.data : descendantsOf(run.run_id, runs.data);
    return buildRunTree(run.run_id, below);
  }, [runs.data, root, run.run_id]);
  if (!tree || tree.length === 0) return null;
  const rows = flattenTree(tree, collapsed);
  const counts = countStates(tree);
  const toggle = (id: string) => {
    const next = new Set(collapsed);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setCollapsed(next);
  };
  return (
    <section aria-labelledby="children-h">
      <h2 id="children-h">
        Child runs{' '}
        <span class="muted counts">
          {Object.entries(counts)
            .map(([s, n]) => `${n} ${humanize(s)}`)
            .join(' · ')}
        </span>
      </h2>
      <div class="table-wrap">
        <table class="tree">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Iteration</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Duration
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((n) => (
              <tr key={n.run.run_id} data-run-id={n.run.run_id}>
                <td>
                  <span class="indent" style={{ '--depth': String(n.depth) }}>
                    {n.hasChildren ? (
                      <button
                        type="button"
                        class="twisty"
                        aria-expanded={!collapsed.has(n.run.run_id)}
                        aria-label={`${collapsed.has(n.run.run_id) ? 'Expand' : 'Collapse'} ${n.run.run_name}`}
                        onClick={() => toggle(n.run.run_id)}
                      >
                        {collapsed.has(n.run.run_id) ? '▸' : '▾'}
                      </button>
                    ) : (
                      <span class="twisty-space" />
                    )}
                    <a href={formatRoute({ name: 'run', id: n.run.run_id })}>{n.run.run_name}</a>
                  </span>
                </td>
                <td>
                  {n.run.iteration_key !== null ? (
                    <code>{n.run.iteration_key}</code>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>
                  <StateBadge state={n.run.state} />
                </td>
                <td class="num">{formatDuration(runDuration(n.run, now))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
