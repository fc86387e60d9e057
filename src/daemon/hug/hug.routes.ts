import { z } from 'zod';
import { route } from '../router.js';
import { enqueueHugMessage, takeHugMessages } from './hug.repo.js';

/** "Human gate" messages: the hub delivers review messages; agents waiting for a review poll them. */
const reviewId = z.string().min(1).max(200);

export const hugRoutes = [
  route({
    path: 'hug/deliver',
    summary: 'Hub → daemon: queues a review message for the agent waiting on review_id.',
    input: z.object({
      tx_id: z.string().min(1).optional(),
      review_id: reviewId,
      message: z.object({
        type: z.string().min(1).max(200),
        role: z.string().min(1).max(200),
        payload: z.record(z.string(), z.unknown()).default({}),
      }),
    }),
    async handler(ctx, input) {
      await enqueueHugMessage(ctx.db, input.review_id, input.message, ctx.now());
      return { review_id: input.review_id, queued: true };
    },
  }),
  route({
    path: 'hug/poll_verdict',
    summary: 'Returns and removes every message waiting for review_id, oldest first.',
    input: z.object({ review_id: reviewId }),
    async handler(ctx, input) {
      // The router runs this in one SQLite transaction: select and delete are atomic.
      return { entries: await takeHugMessages(ctx.db, input.review_id) };
    },
  }),
];
