import { z } from 'zod';
import { requireDaemon } from '../access/access.service.js';
import { id, op } from '../http/op.js';
import { claimItem } from './queue.service.js';

/** Daemon-side queue operations (realm token only). */
export const queueOps = [
  op({
    name: 'queue/claim',
    summary: 'A daemon claims an offered queue item; the first claim wins, the others get claimed: false.',
    input: z.object({ queue_item_id: id, daemon_id: id }),
    async handler(ctx, input) {
      const actor = requireDaemon(ctx.actor);
      return { data: await claimItem(ctx, actor, input) };
    },
  }),
];
