import { useRef, useState } from 'preact/hooks';
import { type ApiError, api } from '../api.js';
import { formatStamp, humanize, isoTime } from '../format.js';
import { realmRunsStream, useLive, useNow } from '../live.js';
import { formatRoute } from '../router.js';
import { useScope } from '../scope.js';
import type { Review, ReviewAction } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonBlock } from '../ui.js';

const VERDICT: Record<string, string> = {
  approve: 'Approved',
  reject: 'Rejected',
  request_changes: 'Changes requested',
  comment: 'Commented',
};

/** True when the hub has no reviews API (an older hub): the console then hides reviews. */
export function reviewsMissing(err: ApiError | null): boolean {
  return err?.code === 'not_found' && /no operation/.test(err.message);
}

/**
 * Who may decide a review (src/hub/reviews: reviews.manage, or reviews.submit when named): the
 * realm's operators and admins always (org owners and admins and the site administrator count as
 * realm admins), and the members the run names for the phase.
 */
export function whoDecides(reviewers: string[] | null): string {
  const staff = 'operators and admins of the realm (with org owners and admins, and the site admin)';
  return reviewers?.length ? `${reviewers.join(', ')}, and the ${staff}` : `The ${staff}`;
}

/** `Approved by dev · 2026-11-23 21:40` (local time). */
export function verdictLine(review: Review): string {
  const v = review.verdict;
  if (!v) return '';
  const by = review.closed_by ? ` by ${review.closed_by.handle ?? 'a removed user'}` : '';
  const at = review.closed_at === null ? '' : ` · ${formatStamp(review.closed_at)}`;
  return `${VERDICT[v.action] ?? humanize(v.action)}${by}${at}`;
}

/**
 * What a reviewer reads: the agent's summary, then (a `review: true` phase) the phase's outputs and
 * its last log lines, with a link to the phase's whole log on the run page.
 */
function ReviewContext({ review }: { review: Review }) {
  const logs = formatRoute({ name: 'run', id: review.run_id, phase: review.phase });
  const outputs = review.outputs && Object.keys(review.outputs).length ? review.outputs : null;
  return (
    <>
      {review.summary ? <p class="summary">{review.summary}</p> : null}
      {outputs ? (
        <details class="review-outputs">
          <summary>Outputs of {review.phase}</summary>
          <pre>{JSON.stringify(outputs, null, 2)}</pre>
        </details>
      ) : null}
      {review.log_excerpt ? (
        <details class="review-log" open>
          <summary>Last log lines of {review.phase}</summary>
          <pre class="log-excerpt">{review.log_excerpt}</pre>
        </details>
      ) : null}
      <p class="review-links">
        <a href={logs}>Full log of phase {review.phase}</a>
      </p>
    </>
  );
}

/** One review: what it is about, its deadline, and (when `can_submit`) the verdict form. */
export function ReviewCard({
  review,
  now,
  onDone,
  showRun = true,
}: {
  review: Review;
  now: number;
  onDone: (r: Review) => void;
  showRun?: boolean;
}) {
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState<ReviewAction | null>(null);
  const [error, setError] = useState<string | null>(null);
  const overdue = review.deadline_at !== null && review.deadline_at < now && review.state === 'open';
  const commentId = `comment-${review.id}`;

  const submit = async (action: ReviewAction) => {
    setBusy(action);
    setError(null);
    try {
      const r = await api('reviews/submit', {
        review_id: review.id,
        action,
        ...(comment.trim() ? { comment: comment.trim() } : {}),
      });
      setComment('');
      onDone(r.data);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(null);
    }
  };

  return (
    <article class="card review" aria-labelledby={`review-${review.id}`} data-review-id={review.id}>
      <header>
        <h3 id={`review-${review.id}`}>
          {showRun ? (
            <>
              <a href={formatRoute({ name: 'run', id: review.run_id })}>{review.run_name}</a> ·{' '}
            </>
          ) : null}
          phase <strong>{review.phase}</strong>
          {review.round > 1 ? ` · round ${review.round}` : ''}
        </h3>
        <span class={`badge review-${review.state}`}>{humanize(review.state)}</span>
      </header>
      <ReviewContext review={review} />
      <dl class="facts">
        {review.team_name ? (
          <div>
            <dt>Team</dt>
            <dd>{review.team_name}</dd>
          </div>
        ) : null}
        <div>
          <dt>Requested</dt>
          <dd>
            <Ago at={review.requested_at} now={now} />
          </dd>
        </div>
        <div>
          <dt>Deadline</dt>
          <dd class={overdue ? 'overdue' : ''}>
            {review.deadline_at === null ? 'none' : <Ago at={review.deadline_at} now={now} />}
            {overdue ? ' (overdue)' : ''}
          </dd>
        </div>
        <div>
          <dt>Who decides</dt>
          <dd>{whoDecides(review.reviewers)}</dd>
        </div>
      </dl>
      {review.verdict ? (
        <p class="verdict">
          {review.closed_at === null ? (
            verdictLine(review)
          ) : (
            <time dateTime={isoTime(review.closed_at)}>{verdictLine(review)}</time>
          )}
          {review.verdict.comment ? `: “${review.verdict.comment}”` : ''}
        </p>
      ) : null}
      {review.state === 'open' && review.can_submit ? (
        <form class="review-form" onSubmit={(e) => e.preventDefault()}>
          <label for={commentId}>Comment</label>
          <textarea
            id={commentId}
            rows={2}
            value={comment}
            onInput={(e) => setComment((e.target as HTMLTextAreaElement).value)}
            placeholder="What you checked, what to change…"
          />
          <div class="buttons">
            <button type="button" class="primary" disabled={busy !== null} onClick={() => submit('approve')}>
              {busy === 'approve' ? 'Approving…' : 'Approve'}
            </button>
            <button type="button" disabled={busy !== null} onClick={() => submit('request_changes')}>
              Request changes
            </button>
            <button type="button" class="danger" disabled={busy !== null} onClick={() => submit('reject')}>
              Reject
            </button>
          </div>
          {error ? (
            <p class="note error" role="alert">
              {error}
            </p>
          ) : null}
        </form>
      ) : review.state === 'open' ? (
        <p class="note">You are not one of the reviewers of this phase.</p>
      ) : null}
    </article>
  );
}

/**
 * The realm's reviews: open ones (the inbox), or all with `#/reviews?all=1`; read again when a run of
 * the realm starts to wait for a review or a run shown here moves (a review decided or expired), or
 * every 5 s while the realm's stream cannot be opened.
 */
export function ReviewsPage({ all }: { all: boolean }) {
  const { realm } = useScope();
  const now = useNow(5000);
  const [mine, setMine] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const shownRuns = useRef<ReadonlySet<string>>(new Set());
  const reviews = useLive(
    async (signal) => {
      if (!realm) return null;
      return api(
        'reviews/list',
        { realm_id: realm.id, state: all ? 'all' : 'open', limit: 100, ...(mine ? { mine: true } : {}) },
        { signal },
      );
    },
    [realm?.id, all, mine],
    5000,
    realm
      ? realmRunsStream(
          realm.id,
          (run) => run.state === 'awaiting_input' || shownRuns.current.has(run.run_id ?? ''),
        )
      : null,
  );
  const list = reviews.data?.data;
  shownRuns.current = new Set(list?.map((r) => r.run_id));
  return (
    <>
      <PageTitle>Reviews</PageTitle>
      <div class="filters">
        <a href={formatRoute({ name: 'reviews', all: false })} aria-current={all ? undefined : 'page'}>
          Open
        </a>
        <a href={formatRoute({ name: 'reviews', all: true })} aria-current={all ? 'page' : undefined}>
          All
        </a>
        <label class="check">
          <input
            type="checkbox"
            checked={mine}
            onChange={(e) => setMine((e.target as HTMLInputElement).checked)}
          />
          Only mine
        </label>
      </div>
      <p class="note ok" role="status">
        {done ?? ''}
      </p>
      {reviewsMissing(reviews.error) ? (
        <p class="note">This hub does not offer reviews yet.</p>
      ) : (
        <ErrorNote error={reviews.error} what="Could not load the reviews" />
      )}
      {list === undefined && !reviews.error ? <SkeletonBlock lines={6} /> : null}
      {list?.length === 0 ? (
        <Empty>{all ? 'No reviews in this realm.' : 'Nothing waits for a review.'}</Empty>
      ) : null}
      <div class="cards">
        {list?.map((r) => (
          <ReviewCard
            key={r.id}
            review={r}
            now={now}
            onDone={(v) => {
              setDone(`${VERDICT[v.verdict?.action ?? ''] ?? 'Submitted'}: ${v.run_name}, phase ${v.phase}.`);
              reviews.refresh();
            }}
          />
        ))}
      </div>
    </>
  );
}
