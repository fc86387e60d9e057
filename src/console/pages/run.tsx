import { useEffect, useState } from 'preact/hooks';
import { isTerminal } from '../../shared/api/run-states.js';
import { runningTime } from '../../shared/api/run-time.js';
import { api } from '../api.js';
import { formatDuration, shortId, waitingText } from '../format.js';
import { runStream, useLive, useNow } from '../live.js';
import { formatRoute } from '../router.js';
import { formFromRun } from '../start-run-form.js';
import type { Run } from '../types.js';
import { ErrorNote, PageTitle, SkeletonBlock, StateBadge, When } from '../ui.js';
import { RunArtifacts } from './run/artifacts.js';
import { ChildRuns } from './run/children.js';
import { Controls } from './run/controls.js';
import { Logs } from './run/logs.js';
import { RunReviews } from './run/reviews.js';
import { History, Timeline } from './run/timeline.js';
import { StartRunDialog } from './start-run.js';

/**
 * One run: its facts and controls, open reviews, phases on a timeline, child runs as a tree, live logs
 * and history. While the run is live each part follows the run's event stream (the run's facts read
 * again on its state and history events, the logs from the stream's own lines), or, while the stream
 * cannot be opened, reads again on an interval.
 */
export function RunPage({ id, phase }: { id: string; phase: string | null }) {
  // Follows the run's event stream while it lives (polling each second if the stream cannot be
  // opened); a run that ended is loaded no more (actions refresh it).
  const [ended, setEnded] = useState(false);
  const run = useLive(
    (signal) => api('runs/get_by_id', { run_id: id, with_history: true }, { signal }).then((r) => r.data),
    [id],
    ended ? null : 1000,
    ended ? null : runStream(id, 'state', 'history'),
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
      {r ? <RunBody phase={phase} run={r} live={live} now={now} refresh={run.refresh} /> : <RunSkeleton />}
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

function RunBody({
  run,
  live,
  now,
  refresh,
  phase,
}: {
  run: Run;
  live: boolean;
  now: number;
  refresh: () => void;
  phase: string | null;
}) {
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
    // Its daemon lost: the run's state moves when its lease expires.
    live ? runStream(run.run_id, 'state') : null,
  );
  const history = run.history ?? [];
  const [again, setAgain] = useState(false);
  const ran = runningTime(run, history, now);
  return (
    <>
      <Lineage run={run} />
      {again && realm.data ? (
        <StartRunDialog
          orgId={realm.data.org_id}
          realmId={run.realm_id}
          initial={formFromRun(
            run,
            team.data ? { name: team.data.name, version: team.data.version } : { name: '', version: '' },
            run.reviewers,
          )}
          title="Run again"
          onClose={() => setAgain(false)}
        />
      ) : null}
      <dl class="facts run-facts">
        <div>
          <dt>Team</dt>
          <dd>{team.data ? `${team.data.name}@${team.data.version}` : <span class="muted">—</span>}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>
            <When at={run.started_at} now={now} />
          </dd>
        </div>
        <div>
          <dt>{run.completed_at ? 'Ran for' : 'Running for'}</dt>
          <dd
            class="tabular"
            title="time an agent process was at work; time queued, waiting for a review, failed or cancelled does not count"
          >
            {formatDuration(ran.ms)}
            {ran.attempts > 1 ? <span class="muted"> · {ran.attempts} attempts</span> : null}
          </dd>
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
        {run.state === 'queued' ? (
          <div class="wide">
            <dt>Waiting for</dt>
            <dd data-waiting-for>
              {waitingText(run.waiting_for) ?? <span class="muted">a daemon</span>}
              {run.priority !== 5 ? <span class="muted"> · priority {run.priority}</span> : null}
            </dd>
          </div>
        ) : null}
        {run.run_deadline_at && !run.completed_at ? (
          <div>
            <dt>Deadline</dt>
            <dd>
              <When at={run.run_deadline_at} now={now} />
            </dd>
          </div>
        ) : null}
        <div class="wide">
          <dt>Run id</dt>
          <dd>
            <code>{run.run_id}</code>
          </dd>
        </div>
      </dl>
      <Controls run={run} role={realm.data?.my_role} roleKnown={realm.data !== undefined} refresh={refresh} />
      {isTerminal(run.state) && run.parent_run_id === null && realm.data?.my_role ? (
        <p class="buttons">
          <button type="button" onClick={() => setAgain(true)}>
            Run again…
          </button>
        </p>
      ) : null}
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
      <RunArtifacts run={run} live={live} />
      <Logs run={run} live={live} phase={phase} />
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
