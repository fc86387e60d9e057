import { useEffect, useState } from 'preact/hooks';
import { RUN_STATES, type RunState } from '../../shared/api/run-states.js';
import { api, listAll } from '../api.js';
import { formatDuration, humanize, runDuration, waitingText } from '../format.js';
import { realmEvents, useLive, useNow } from '../live.js';
import { formatRoute } from '../router.js';
import { useScope } from '../scope.js';
import type { TeamVersion } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonRows, StateBadge } from '../ui.js';

const PAGE = 25;

/** The realm's top-level runs, newest first, refreshed every 3 s; filters live in the hash. */
export function RunsPage({ state, team }: { state: string | null; team: string | null }) {
  const { realm, org } = useScope();
  const now = useNow(1000);
  // The cursors of the pages before this one (Back pops one).
  const [cursors, setCursors] = useState<string[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const realmId = realm?.id ?? null;
  const validState = state && (RUN_STATES as readonly string[]).includes(state) ? (state as RunState) : null;
  // Another realm or filter starts at the newest page again.
  useEffect(() => {
    setCursors([]);
    setCursor(null);
  }, [realmId, validState, team]);

  const teams = useLive(
    async () => {
      if (!org) return new Map<string, string>();
      const list = await listAll<'teams/list', TeamVersion>('teams/list', { org_id: org.id }, 4);
      const names = new Map<string, string>();
      for (const t of list) if (!names.has(t.team_id)) names.set(t.team_id, t.name);
      return names;
    },
    [org?.id],
    null,
  );

  const runs = useLive(
    async (signal) => {
      if (!realmId) return null;
      return api(
        'runs/list',
        {
          realm_id: realmId,
          top_level: true,
          limit: PAGE,
          ...(validState ? { state: validState } : {}),
          // Queued runs are listed in the order they start, with their position.
          ...(validState === 'queued' ? { order: 'queue' as const } : {}),
          ...(team ? { team_id: team } : {}),
          ...(cursor ? { cursor } : {}),
        },
        { signal },
      );
    },
    [realmId, validState, team, cursor],
    3000,
    realmId ? realmEvents(realmId) : null,
  );

  const setFilter = (next: { state?: string | null; team?: string | null }) => {
    location.hash = formatRoute({
      name: 'runs',
      state: next.state !== undefined ? next.state : state,
      team: next.team !== undefined ? next.team : team,
    });
  };

  const rows = runs.data?.data;
  return (
    <>
      <PageTitle aside={<span class="live-dot" title="updates every 3 seconds" />}>Runs</PageTitle>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter runs">
        <label>
          State
          <select
            value={validState ?? ''}
            onChange={(e) => setFilter({ state: (e.target as HTMLSelectElement).value || null })}
          >
            <option value="">any</option>
            {RUN_STATES.map((s) => (
              <option key={s} value={s}>
                {humanize(s)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Team
          <select
            value={team ?? ''}
            onChange={(e) => setFilter({ team: (e.target as HTMLSelectElement).value || null })}
          >
            <option value="">any</option>
            {[...(teams.data ?? new Map<string, string>()).entries()].map(([id, name]) => (
              <option key={id} value={id}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ErrorNote error={runs.error} what="Could not load the runs" />
      <div class="table-wrap">
        <table class="runs" aria-busy={rows === undefined}>
          <caption class="sr-only">Runs of realm {realm?.name ?? ''}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col" class="hide-narrow">
                Team
              </th>
              <th scope="col">State</th>
              <th scope="col" class="hide-narrow">
                Phase
              </th>
              <th scope="col">Started</th>
              <th scope="col" class="num">
                Duration
              </th>
            </tr>
          </thead>
          <tbody>
            {rows === undefined ? <SkeletonRows rows={8} cols={6} narrow={[1, 3]} /> : null}
            {rows?.map((r) => (
              <tr key={r.run_id} data-run-id={r.run_id}>
                <td>
                  <a href={formatRoute({ name: 'run', id: r.run_id })}>{r.run_name}</a>
                </td>
                <td class="hide-narrow">
                  {(r.team_id && teams.data?.get(r.team_id)) ?? <span class="muted">—</span>}
                </td>
                <td>
                  {r.queue_position !== undefined ? (
                    <span class="muted tabular" title="position in the queue">
                      #{r.queue_position}{' '}
                    </span>
                  ) : null}
                  <StateBadge state={r.state} />
                  {r.state === 'queued' && r.waiting_for ? (
                    <div class="muted small" data-waiting-for>
                      waiting: {waitingText(r.waiting_for)}
                    </div>
                  ) : null}
                </td>
                <td class="hide-narrow">{r.current_phase ?? <span class="muted">—</span>}</td>
                <td>
                  <Ago at={r.started_at} now={now} />
                </td>
                <td class="num">{formatDuration(runDuration(r, now))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows?.length === 0 ? (
        <Empty>
          No runs{validState || team ? ' match these filters' : ' in this realm yet'}. Start one with{' '}
          <code>svc runs start &lt;team&gt;</code>.
        </Empty>
      ) : null}
      <nav class="pager" aria-label="Pages">
        <button
          type="button"
          disabled={cursors.length === 0 && cursor === null}
          onClick={() => {
            const prev = [...cursors];
            const back = prev.pop() ?? null;
            setCursors(prev);
            setCursor(back);
          }}
        >
          ← Newer
        </button>
        <button
          type="button"
          disabled={!runs.data?.next_cursor}
          onClick={() => {
            if (!runs.data?.next_cursor) return;
            setCursors(cursor === null ? cursors : [...cursors, cursor]);
            setCursor(runs.data.next_cursor);
          }}
        >
          Older →
        </button>
      </nav>
    </>
  );
}
