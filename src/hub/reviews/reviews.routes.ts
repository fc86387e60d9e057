import { z } from 'zod';
import { ReviewRequestBody } from '../../shared/protocol.js';
import { requireDaemon } from '../access/access.service.js';
import { id, op, paging } from '../http/op.js';
import { REVIEW_ACTIONS, REVIEW_STATES } from './reviews.repo.js';
import { getReview, listReviews, requestReview, submitReview } from './reviews.service.js';

/** Reviews: the daemon-side request (realm token) and the reviewers' operations. */
export const reviewOps = [
  op({
    name: 'reviews/request',
    summary: 'A daemon asks for a review of a phase of a run it holds: the run awaits input until a verdict.',
    input: ReviewRequestBody,
    async handler(ctx, input) {
      const { review, created } = await requestReview(ctx, requireDaemon(ctx.actor), input);
      ctx.status(created ? 201 : 200);
      return { data: review };
    },
  }),
  op({
    name: 'reviews/list',
    summary:
      "A realm's reviews, oldest first: open ones by default; members see those naming them as reviewer.",
    input: z.object({
      realm_id: id,
      state: z.enum([...REVIEW_STATES, 'closed', 'all']).default('open'),
      mine: z.boolean().optional(),
      run_id: id.optional(),
      ...paging,
    }),
    async handler(ctx, input) {
      return listReviews(ctx, ctx.actor, input);
    },
  }),
  op({
    name: 'reviews/get',
    summary: 'A review with every verdict and comment submitted on it.',
    input: z.object({ id }),
    async handler(ctx, input) {
      return { data: await getReview(ctx, ctx.actor, input.id) };
    },
  }),
  op({
    name: 'reviews/submit',
    summary:
      'Approves, rejects, asks for changes (closing the review) or comments; the verdict reaches the daemon.',
    input: z.object({
      review_id: id,
      action: z.enum(REVIEW_ACTIONS),
      comment: z.string().max(10_000).optional(),
    }),
    async handler(ctx, input) {
      return { data: await submitReview(ctx, ctx.actor, input) };
    },
  }),
];
