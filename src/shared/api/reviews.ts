import { z } from 'zod';
import { ms } from './envelope.js';
import { REVIEW_ACTIONS, REVIEW_STATES } from './review-states.js';

export { REVIEW_ACTIONS, REVIEW_STATES };

/** Reviews: a person's verdict on a phase of a run (docs/api.md "Reviews"). */

export const ReviewState = z.enum(REVIEW_STATES);
export type ReviewState = z.infer<typeof ReviewState>;

export const ReviewAction = z.enum(REVIEW_ACTIONS);
export type ReviewAction = z.infer<typeof ReviewAction>;

export const Review = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  realm_id: z.string(),
  org_id: z.string(),
  phase: z.string(),
  kind: z.enum(['phase', 'agent']),
  round: z.number(),
  summary: z.string(),
  /** A `review: true` phase's outputs (null: an agent's own request). */
  outputs: z.record(z.string(), z.unknown()).nullable(),
  /** The last lines of the phase's log when the review was requested. */
  log_excerpt: z.string().nullable(),
  state: ReviewState,
  reviewers: z.array(z.string()).nullable(),
  requested_at: ms,
  deadline_at: ms.nullable(),
  closed_at: ms.nullable(),
  closed_by: z.strictObject({ user_id: z.string(), handle: z.string().nullable() }).nullable(),
  verdict: z
    .strictObject({
      action: z.enum(['approve', 'reject', 'request_changes', 'expired']),
      comment: z.string().nullable(),
    })
    .nullable(),
  run_name: z.string(),
  team_name: z.string().nullable(),
  /** Whether the caller may submit a verdict now. */
  can_submit: z.boolean(),
});
export type Review = z.infer<typeof Review>;

/** A verdict or comment submitted on a review (`actor` null: the system). */
export const Submission = z.strictObject({
  action: ReviewAction,
  comment: z.string().nullable(),
  actor: z.strictObject({ user_id: z.string(), handle: z.string().nullable() }).nullable(),
  created_at: ms,
});

/** `reviews/get`: the review with every submission, oldest first. */
export const ReviewDetail = Review.extend({ submissions: z.array(Submission) });
export type ReviewDetail = z.infer<typeof ReviewDetail>;
