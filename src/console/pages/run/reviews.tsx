import { api } from '../../api.js';
import { runStream, useLive } from '../../live.js';
import type { Run } from '../../types.js';
import { ReviewCard, reviewsMissing } from '../reviews.js';

/** The open reviews of a run, with their verdict forms. */

export function RunReviews({
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
    // A review opens or closes with a move of the run's state (awaiting_input and back).
    live ? runStream(run.run_id, 'state') : null,
  );
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
