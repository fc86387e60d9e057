import { z } from 'zod';
import { DaemonError } from '../errors.js';
import { HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { route } from '../router.js';
import { leaseEpochOf } from '../runner/active-runs.repo.js';
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
      const fromHub = ctx.caller.kind === 'hub' || ctx.caller.kind === 'dispatch';
      await enqueueHugMessage(ctx.db, input.review_id, input.message, ctx.now(), fromHub);
      // A run waiting for this review's verdict reads it (after this transaction commits).
      ctx.runner?.hugInbox.notify(input.review_id);
      return { review_id: input.review_id, queued: true };
    },
  }),
  route({
    path: 'hug/poll_verdict',
    summary: 'Returns and removes every message waiting for review_id, oldest first.',
    input: z.object({ review_id: reviewId }),
    async handler(ctx, input) {
      // The router runs this in one SQLite transaction: select and delete are atomic.
      const taken = await takeHugMessages(ctx.db, input.review_id);
      return { entries: taken.map(({ fromHub: _, ...entry }) => entry) };
    },
  }),
  route({
    path: 'hug/request',
    summary:
      'Agent → daemon → hub: asks for a review of a run running here (the hub’s reviews/request); answers review_id.',
    transactional: false,
    input: z.object({
      run_id: z.string().min(1).max(200),
      phase: z.string().min(1).max(200),
      summary: z.string().min(1).max(65_536),
      lease_epoch: z.number().int().min(0).optional(),
      tx_id: z.string().min(1).optional(),
    }),
    async handler(ctx, input) {
      if (!ctx.hub.hasCredentials) {
        throw new DaemonError('HUB_CREDENTIALS_MISSING', 'this daemon has no hub to ask for a review');
      }
      const epoch =
        input.lease_epoch ?? ctx.runner?.epochOf(input.run_id) ?? (await leaseEpochOf(ctx.db, input.run_id));
      if (epoch === null) throw new DaemonError('NOT_FOUND', 'no such run is running on this daemon');
      // The agent may ask before the hub has heard that its run started (that report goes out
      // with the phase's start, once the agent runs): the hub takes a review only for a running run.
      await ctx.runner?.reported(input.run_id);
      try {
        const review = await ctx.hub.call<{ id: string; round: number; deadline_at: number | null }>(
          'reviews/request',
          {
            run_id: input.run_id,
            lease_epoch: epoch,
            phase: input.phase,
            summary: input.summary,
            kind: 'agent',
          },
        );
        return { review_id: review.id, round: review.round, deadline_at: review.deadline_at };
      } catch (err) {
        if (err instanceof HubRefusedError) {
          if (err.status === 404) throw new DaemonError('NOT_FOUND', `the hub: ${err.message}`);
          throw new DaemonError('BAD_REQUEST', `the hub refused the review: ${err.message}`, {
            hub_code: err.hubCode,
          });
        }
        if (err instanceof HubUnreachableError) throw new DaemonError('INTERNAL_ERROR', err.message);
        throw err;
      }
    },
  }),
];
