import { z } from 'zod';
import { requireDaemon } from '../access/access.service.js';
import { id, op } from '../http/op.js';
import { runClaimed } from '../runs/runs.dispatch.js';
import { claimItem } from './queue.service.js';

/** Daemon-side queue operations (realm token only). */
export const queueOps = [
  op({
    name: 'queue/claim',
    summary: 'A daemon claims an offered queue item; the first claim wins, the others get claimed: false.',
    input: z.object({ queue_item_id: id, daemon_id: id }),
    async handler(ctx, input) {
      const actor = requireDaemon(ctx.actor);
      const claim = await claimItem(ctx, actor, input);
      // A run's item: the winner holds the run and gets its runs/execute command.
      const run = claim.claimed ? await runClaimed(ctx, claim.queue_item_id, actor.daemon.id) : null;
      return { data: run ? { ...claim, run } : claim };
    },
  }),
];
