import { useEffect, useState } from 'preact/hooks';
import type { OrgMember } from '../../shared/api/access.js';
import { RUN_STATES, type RunState } from '../../shared/api/run-states.js';
import { api, listAll } from '../api.js';
import { dayRange, formatDuration, humanize, runDuration, waitingText } from '../format.js';
import { realmRunsStream, useLive, useNow } from '../live.js';
import { formatRoute, noRunFilters, RUN_FILTERS, type RunFilters } from '../router.js';
import { useScope } from '../scope.js';
import { emptyForm } from '../start-run-form.js';
import type { TeamVersion } from '../types.js';
import { Empty, ErrorNote, PageTitle, SkeletonRows, StateBadge, When } from '../ui.js';
import { StartRunDialog } from './start-run.js';

const PAGE = 25;

/** The realm's top-level runs, newest first, live; filters live in the hash. */
export function RunsPage({ filters }: { filters: RunFilters }) {
  const { state, team, q, by, from, to } = filters;
  const { realm, org, role } = useScope();
  const now = useNow(1000);
  const [starting, setStarting] = useState(false);
  const [search, setSearch] = useState(q ?? '');
  useEffect(() => setSearch(q ?? ''), [q]);
  // The cursors of the pages before this one (Back pops one).
  const [cursors, setCursors] = useState<string[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const realmId = realm?.id ?? null;
  const validState = state && (RUN_STATES as readonly string[]).includes(state) ? (state as RunState) : null;
  // Another realm or filter starts at the newest page again.
  useEffect(() => {
    setCursors([]);
    setCursor(null);
  }, [realmId, validState, team, q, by, from, to]);
  const range = dayRange(from, to);

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
  // Who may have started runs: the org's people (a role that may not list them sees "me" only).
  const people = useLive(
    async () => {
      if (!org) return [];
      return listAll<'orgs/list_members', OrgMember>('orgs/list_members', { org_id: org.id }, 2).catch(
        () => [],
      );
    },
    [org?.id],
    null,
  );
  const handles = new Map((people.data ?? []).map((m) => [m.user.id, m.user.handle]));

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
          ...(q ? { name_contains: q } : {}),
          ...(by ? { created_by_user_id: by } : {}),
          ...(range.after !== null ? { started_after: range.after } : {}),
          ...(range.before !== null ? { started_before: range.before } : {}),
          ...(cursor ? { cursor } : {}),
        },
        { signal },
      );
    },
    [realmId, validState, team, q, by, from, to, cursor],
    3000,
    realmId ? realmRunsStream(realmId) : null,
  );

  const setFilter = (next: Partial<RunFilters>) => {
    location.hash = formatRoute({ name: 'runs', ...filters, ...next });
  };
  const filtered = RUN_FILTERS.some((k) => filters[k] !== null);
  const pick = (e: Event) => (e.target as HTMLInputElement).value || null;

  const rows = runs.data?.data;
  return (
    <>
      <PageTitle
        aside={
          <>
            {role && realm && org ? (
              <button type="button" class="primary" onClick={() => setStarting(true)}>
                Start a run
              </button>
            ) : null}
            <span class="live-dot" title="updates as runs change" />
          </>
        }
      >
        Runs
      </PageTitle>
      {starting && realm && org ? (
        <StartRunDialog
          orgId={org.id}
          realmId={realm.id}
          initial={emptyForm()}
          title="Start a run"
          onClose={() => setStarting(false)}
        />
      ) : null}
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter({ q: search.trim() || null });
        }}
        aria-label="Filter runs"
      >
        <label>
          Name
          <input
            type="search"
            name="q"
            placeholder="search names"
            value={search}
            onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
            onBlur={() => (search.trim() || null) !== q && setFilter({ q: search.trim() || null })}
          />
        </label>
        <label>
          State
          <select value={validState ?? ''} onChange={(e) => setFilter({ state: pick(e) })}>
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
          <select value={team ?? ''} onChange={(e) => setFilter({ team: pick(e) })}>
            <option value="">any</option>
            {[...(teams.data ?? new Map<string, string>()).entries()].map(([id, name]) => (
              <option key={id} value={id}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Started by
          <select name="by" value={by ?? ''} onChange={(e) => setFilter({ by: pick(e) })}>
            <option value="">anyone</option>
            {[...handles.entries()].map(([id, handle]) => (
              <option key={id} value={id}>
                {handle}
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="date" name="from" value={from ?? ''} onChange={(e) => setFilter({ from: pick(e) })} />
        </label>
        <label>
          To
          <input type="date" name="to" value={to ?? ''} onChange={(e) => setFilter({ to: pick(e) })} />
        </label>
        {filtered ? (
          <button
            type="button"
            class="link"
            onClick={() => (location.hash = formatRoute({ name: 'runs', ...noRunFilters() }))}
          >
            Clear filters
          </button>
        ) : null}
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
              <th scope="col" class="hide-narrow">
                By
              </th>
              <th scope="col">Started</th>
              <th scope="col" class="num">
                Duration
              </th>
            </tr>
          </thead>
          <tbody>
            {rows === undefined ? <SkeletonRows rows={8} cols={7} narrow={[1, 3, 4]} /> : null}
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
                <td class="hide-narrow">
                  {(r.created_by_user_id && handles.get(r.created_by_user_id)) ?? (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>
                  <When at={r.started_at} now={now} />
                </td>
                <td class="num">{formatDuration(runDuration(r, now))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows?.length === 0 ? (
        <Empty>
          No runs{filtered ? ' match these filters' : ' in this realm yet'}. Start one with the button above
          or <code>svc runs start &lt;team&gt;</code>.
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
