import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { isTerminal } from '../../shared/api/run-states.js';
import { api, listAll } from '../api.js';
import { explainBlocker, formatDuration, humanize, runDuration, shortId } from '../format.js';
import { useLive, useNow } from '../live.js';
import { runControls } from '../permissions.js';
import { formatRoute } from '../router.js';
import { barGeometry, phaseTimeline } from '../timeline.js';
import { buildRunTree, countStates, descendantsOf, flattenTree } from '../tree.js';
import type { HistoryEntry, LogLine, Run } from '../types.js';
import { Clock, Empty, ErrorNote, Modal, PageTitle, SkeletonBlock, SkeletonRows, StateBadge } from '../ui.js';
import { ReviewCard, reviewsMissing } from './reviews.js';

/** At most this many log lines stay in the page; older ones are dropped (the CLI shows them all). */
const MAX_LINES = 5000;

/**
 * One run: its facts and controls, open reviews, phases on a timeline, child runs as a tree, live logs
 * and history. While the run is live it is polled every second; logs follow with the `after` cursor.
 */
export function RunPage({ id }: { id: string }) {
  // Polled every second while live; a run that ended is polled no more (actions refresh it).
  const [ended, setEnded] = useState(false);
  const run = useLive(
    (signal) => api('runs/get_by_id', { run_id: id, with_history: true }, { signal }).then((r) => r.data),
    [id],
    ended ? null : 1000,
  );
  const r = run.data;
  const live = r === undefined || !isTerminal(r.state);
  useEffect(() => setEnded(!live), [live]);
  const now = useNow(1000, live);

  if (run.error && !r) {
    return (
      <>
        <PageTitle>Run</PageTitle>
        <ErrorNote error={run.error} what="Could not load the run" />
        <p>
          <a href="#/runs">Back to the runs</a>
        </p>
      </>
    );
  }
  return (
    <>
      <PageTitle aside={r ? <StateBadge state={r.state} /> : <span class="badge">…</span>}>
        {r ? r.run_name : 'Run'}
      </PageTitle>
      <ErrorNote error={r ? run.error : null} what="Updating failed" />
      {r ? <RunBody run={r} live={live} now={now} refresh={run.refresh} /> : <RunSkeleton />}
    </>
  );
}

function RunSkeleton() {
  return (
    <div aria-busy="true">
      <SkeletonBlock lines={4} />
      <SkeletonBlock lines={3} />
      <SkeletonBlock lines={8} />
    </div>
  );
}

function RunBody({ run, live, now, refresh }: { run: Run; live: boolean; now: number; refresh: () => void }) {
  const realm = useLive(
    () => api('realms/get', { id: run.realm_id }).then((x) => x.data),
    [run.realm_id],
    null,
  );
  const team = useLive(
    async () => (run.team_version_id ? (await api('teams/get', { id: run.team_version_id })).data : null),
    [run.team_version_id],
    null,
  );
  const daemon = useLive(
    async () => (run.daemon_id ? (await api('daemons/get', { id: run.daemon_id })).data : null),
    [run.daemon_id],
    live ? 10_000 : null,
  );
  const history = run.history ?? [];
  return (
    <>
      <Lineage run={run} />
      <dl class="facts run-facts">
        <div>
          <dt>Team</dt>
          <dd>{team.data ? `${team.data.name}@${team.data.version}` : <span class="muted">—</span>}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>
            <Clock at={run.started_at} now={now} />
          </dd>
        </div>
        <div>
          <dt>{run.completed_at ? 'Took' : 'Running for'}</dt>
          <dd class="tabular">{formatDuration(runDuration(run, now))}</dd>
        </div>
        <div>
          <dt>Phase</dt>
          <dd>{run.current_phase ?? <span class="muted">—</span>}</dd>
        </div>
        <div>
          <dt>Daemon</dt>
          <dd title={run.daemon_id ?? ''}>
            {daemon.data ? (
              <>
                {daemon.data.name}{' '}
                <span class={`badge status-${daemon.data.status}`}>{daemon.data.status}</span>
              </>
            ) : run.daemon_id ? (
              shortId(run.daemon_id)
            ) : (
              <span class="muted">none yet</span>
            )}
          </dd>
        </div>
        <div class="wide">
          <dt>Run id</dt>
          <dd>
            <code>{run.run_id}</code>
          </dd>
        </div>
      </dl>
      <Controls run={run} role={realm.data?.my_role} roleKnown={realm.data !== undefined} refresh={refresh} />
      {run.error ? (
        <p class="note error run-error" role="alert">
          {run.error}
        </p>
      ) : null}
      <RunReviews run={run} live={live} now={now} refresh={refresh} />
      <section aria-labelledby="phases-h">
        <h2 id="phases-h">Phases</h2>
        <Timeline
          history={history}
          planned={team.data?.definition.phases.map((p) => p.name) ?? []}
          run={run}
          now={now}
        />
      </section>
      <ChildRuns run={run} live={live} now={now} />
      <Logs run={run} live={live} />
      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <History history={history} now={now} />
      </section>
      <details class="json">
        <summary>Inputs and outputs</summary>
        <h3>Inputs</h3>
        <pre>{JSON.stringify(run.inputs, null, 2)}</pre>
        <h3>Outputs</h3>
        <pre>{JSON.stringify(run.outputs, null, 2)}</pre>
      </details>
    </>
  );
}

function Lineage({ run }: { run: Run }) {
  if (!run.parent_run_id) return null;
  return (
    <p class="lineage">
      Child run of <a href={formatRoute({ name: 'run', id: run.parent_run_id })}>its parent</a>
      {run.parent_phase ? (
        <>
          {' '}
          (phase <strong>{run.parent_phase}</strong>
          {run.iteration_key !== null ? (
            <>
              , iteration <code>{run.iteration_key}</code>
            </>
          ) : null}
          )
        </>
      ) : null}
      {run.root_run_id && run.root_run_id !== run.parent_run_id ? (
        <>
          {' '}
          · <a href={formatRoute({ name: 'run', id: run.root_run_id })}>top-level run</a>
        </>
      ) : null}
    </p>
  );
}

type Action = 'cancel' | 'resume' | 'terminate';
const ACTION_TEXT: Record<Action, { title: string; button: string; busy: string }> = {
  cancel: { title: 'Cancel this run?', button: 'Cancel run', busy: 'Cancelling…' },
  resume: { title: 'Resume this run?', button: 'Resume', busy: 'Resuming…' },
  terminate: { title: 'Force-terminate this run?', button: 'Force terminate', busy: 'Terminating…' },
};

function Controls({
  run,
  role,
  roleKnown,
  refresh,
}: {
  run: Run;
  role: Parameters<typeof runControls>[1];
  roleKnown: boolean;
  refresh: () => void;
}) {
  const [open, setOpen] = useState<Action | null>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!roleKnown) return <div class="controls" aria-hidden="true" />;
  const c = runControls(run, role);
  const close = () => {
    setOpen(null);
    setReason('');
    setError(null);
  };
  const confirm = async (e: Event) => {
    e.preventDefault();
    if (!open) return;
    setBusy(true);
    setError(null);
    try {
      if (open === 'cancel')
        await api('runs/cancel', { run_id: run.run_id, ...(reason.trim() ? { reason: reason.trim() } : {}) });
      else if (open === 'resume') await api('runs/resume', { run_id: run.run_id });
      else await api('runs/force_terminate', { run_id: run.run_id, reason: reason.trim() });
      close();
      refresh();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const notes = [c.cancel.blocker, c.resume.blocker, c.terminate.blocker, c.roleNote].filter(Boolean);
  const none = !c.cancel.allowed && !c.resume.allowed && !c.terminate.allowed;
  if (none && notes.length === 0) notes.push(`Nothing to do: the run ${humanize(run.state)}.`);
  const ft = run.force_terminate;
  return (
    <section class="controls" aria-label="Run controls">
      <div class="buttons">
        {c.cancel.allowed ? (
          <button type="button" onClick={() => setOpen('cancel')}>
            Cancel run
          </button>
        ) : null}
        {c.resume.allowed ? (
          <button type="button" onClick={() => setOpen('resume')}>
            Resume
          </button>
        ) : null}
        {c.terminate.allowed ? (
          <button type="button" class="danger" onClick={() => setOpen('terminate')}>
            Force terminate
          </button>
        ) : null}
      </div>
      {notes.map((n) => (
        <p class="note" key={n}>
          {n}
        </p>
      ))}
      {ft.already_terminated ? (
        <p class="note">Terminated{ft.terminated_reason ? `: ${ft.terminated_reason}` : ''}.</p>
      ) : null}
      <Modal open={open !== null} title={open ? ACTION_TEXT[open].title : ''} onClose={close}>
        <form method="dialog" onSubmit={confirm}>
          {open === 'cancel' ? (
            <p>The daemon stops the agent (SIGTERM, then SIGKILL); live child runs are cancelled too.</p>
          ) : null}
          {open === 'resume' ? (
            <p>The run starts again at phase {run.current_phase ?? 'one'}; earlier outputs are kept.</p>
          ) : null}
          {open === 'terminate' ? (
            <p>
              Ends the run on the hub without its daemon ({explainBlocker(ft.trigger) || 'eligible'}). Use it
              only when the daemon cannot.
            </p>
          ) : null}
          {open === 'cancel' || open === 'terminate' ? (
            <label>
              Reason{open === 'terminate' ? ' (required)' : ''}
              <textarea
                rows={2}
                required={open === 'terminate'}
                value={reason}
                onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)}
              />
            </label>
          ) : null}
          {error ? (
            <p class="note error" role="alert">
              {error}
            </p>
          ) : null}
          <div class="buttons">
            <button type="submit" class={open === 'terminate' ? 'danger' : 'primary'} disabled={busy}>
              {open ? (busy ? ACTION_TEXT[open].busy : ACTION_TEXT[open].button) : ''}
            </button>
            <button type="button" onClick={close} disabled={busy}>
              Keep it
            </button>
          </div>
        </form>
      </Modal>
    </section>
  );
}

function RunReviews({
  run,
  live,
  now,
  refresh,
}: {
  run: Run;
  live: boolean;
  now: number;
  refresh: () => void;
}) {
  const reviews = useLive(
    async (signal) =>
      (
        await api(
          'reviews/list',
          { realm_id: run.realm_id, run_id: run.run_id, state: 'open', limit: 100 },
          { signal },
        )
      ).data,
    [run.run_id, run.realm_id],
    live ? 2000 : null,
  );
  // Reload when the run's state changes (a review opened or closed).
  const lastState = useRef(run.state);
  useEffect(() => {
    if (lastState.current !== run.state) {
      lastState.current = run.state;
      reviews.refresh();
    }
  }, [run.state, reviews.refresh]);
  if (reviewsMissing(reviews.error) || !reviews.data?.length) return null;
  return (
    <section aria-labelledby="reviews-h" class="run-reviews">
      <h2 id="reviews-h">Waiting for review</h2>
      {reviews.data.map((rv) => (
        <ReviewCard
          key={rv.id}
          review={rv}
          now={now}
          showRun={false}
          onDone={() => {
            reviews.refresh();
            refresh();
          }}
        />
      ))}
    </section>
  );
}

const PHASE_LABEL: Record<string, string> = { review: 'awaiting review' };

function Timeline({
  history,
  planned,
  run,
  now,
}: {
  history: HistoryEntry[];
  planned: string[];
  run: Run;
  now: number;
}) {
  const spans = phaseTimeline(history, planned, now);
  if (spans.length === 0) return <Empty>No phase has started yet.</Empty>;
  const from = run.started_at;
  const to = run.completed_at ?? now;
  return (
    <ol class="timeline">
      {spans.map((s) => {
        const g = barGeometry(s, from, to, now);
        return (
          <li key={s.name} class={`phase phase-${s.status}`}>
            <span class="phase-name">{s.name}</span>
            <span class="phase-status">{PHASE_LABEL[s.status] ?? humanize(s.status)}</span>
            <span class="phase-bar" aria-hidden="true">
              {g ? <span class="fill" style={{ '--left': `${g.left}%`, '--width': `${g.width}%` }} /> : null}
            </span>
            <span class="phase-time num">
              {formatDuration(s.duration)}
              {s.review_ms > 0 ? ` (review ${formatDuration(s.review_ms)})` : ''}
              {s.attempts > 1 ? ` · ${s.attempts} attempts` : ''}
            </span>
          </li>
        );
      })}
    </ol>
  );
}

function ChildRuns({ run, live, now }: { run: Run; live: boolean; now: number }) {
  const root = run.root_run_id ?? run.run_id;
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const runs = useLive(
    () => listAll<'runs/list', Run>('runs/list', { realm_id: run.realm_id, root_run_id: root }, 4),
    [root, run.realm_id],
    live ? 2000 : null,
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

function Logs({ run, live }: { run: Run; live: boolean }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [dropped, setDropped] = useState(0);
  const [follow, setFollow] = useState(true);
  const box = useRef<HTMLPreElement>(null);
  const last = useRef(0);
  useEffect(() => {
    last.current = 0;
    setLines([]);
    setDropped(0);
  }, [run.run_id]);
  const logs = useLive(
    async (signal) => {
      // Catch up in pages of 1000 (bounded per tick), then wait for the next tick.
      for (let i = 0; i < 10; i++) {
        const page = await api(
          'runs/logs',
          { run_id: run.run_id, after: last.current, limit: 1000 },
          { signal },
        );
        if (signal.aborted) return;
        const fresh = page.data.filter((l) => l.seq > last.current);
        if (fresh.length > 0) {
          last.current = fresh[fresh.length - 1]!.seq;
          setLines((prev) => {
            const all = prev.concat(fresh);
            if (all.length <= MAX_LINES) return all;
            setDropped((d) => d + all.length - MAX_LINES);
            return all.slice(all.length - MAX_LINES);
          });
        }
        if (!page.has_more) break;
      }
      return null;
    },
    [run.run_id],
    live ? 1000 : null,
  );
  useLayoutEffect(() => {
    const el = box.current;
    if (follow && el) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);
  const onScroll = () => {
    const el = box.current;
    if (!el) return;
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
    if (atBottom !== follow) setFollow(atBottom);
  };
  return (
    <section aria-labelledby="logs-h">
      <div class="section-head">
        <h2 id="logs-h">Logs</h2>
        <label class="check">
          <input
            type="checkbox"
            checked={follow}
            onChange={(e) => setFollow((e.target as HTMLInputElement).checked)}
          />
          Follow
        </label>
      </div>
      <ErrorNote error={logs.error} what="Could not load the logs" />
      {dropped > 0 ? (
        <p class="note">{dropped} older lines are not shown; `svc runs logs` prints all.</p>
      ) : null}
      <pre
        class="logs"
        ref={box}
        onScroll={onScroll}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the log scrolls, so the keyboard must reach it
        tabIndex={0}
        role="log"
        aria-label="Run logs"
        aria-live="off"
      >
        {lines.length === 0 ? (
          <span class="muted">{logs.loading ? 'Loading…' : live ? 'No output yet.' : 'No output.'}</span>
        ) : (
          lines.map((l) => (
            <span key={l.seq} class={`line ${l.stream}`}>
              {l.phase ? <span class="tag">[{l.phase}]</span> : null}
              {l.text}
              {'\n'}
            </span>
          ))
        )}
      </pre>
    </section>
  );
}

function actorText(e: HistoryEntry): string {
  const a = e.actor;
  if (!a) return '';
  if (a.type === 'user') return a.handle ?? shortId(a.user_id ?? '');
  if (a.type === 'daemon') return `daemon ${shortId(a.daemon_id ?? '')}`;
  return a.type;
}

/** The extra line of a history entry: its error, or what a review entry says. */
function entryDetail(e: HistoryEntry): string {
  if (e.error) return e.error;
  const d = e.data;
  if (!d) return '';
  if (e.type === 'review.submitted') {
    const comment = typeof d.comment === 'string' && d.comment ? `: “${d.comment}”` : '';
    return `${humanize(String(d.action ?? ''))}${comment}`;
  }
  if (e.type === 'review.requested' && typeof d.round === 'number' && d.round > 1) return `round ${d.round}`;
  return '';
}

function History({ history, now }: { history: HistoryEntry[]; now: number }) {
  return (
    <div class="table-wrap">
      <table class="history">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Phase</th>
            <th scope="col" class="hide-narrow">
              By
            </th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {history.length === 0 ? <SkeletonRows rows={2} cols={5} narrow={[3]} /> : null}
          {history.map((e, i) => (
            <tr key={i}>
              <td>
                <Clock at={e.at} now={now} />
              </td>
              <td>
                {e.type}
                {entryDetail(e) ? <div class="muted small">{entryDetail(e)}</div> : null}
              </td>
              <td>{e.phase ?? ''}</td>
              <td class="hide-narrow">{actorText(e)}</td>
              <td>
                <StateBadge state={e.state} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
