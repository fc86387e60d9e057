import { formatDuration, humanize, shortId } from '../../format.js';
import { barGeometry, phaseTimeline } from '../../timeline.js';
import type { HistoryEntry, Run } from '../../types.js';
import { Empty, SkeletonRows, StateBadge, When } from '../../ui.js';

/** A run's phases on a timeline, and its history. */

const PHASE_LABEL: Record<string, string> = { review: 'awaiting review' };

export function Timeline({
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

export function History({ history, now }: { history: HistoryEntry[]; now: number }) {
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
                <When at={e.at} now={now} />
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
