import { z } from 'zod';
import { DaemonError } from '../errors.js';
import { HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { route } from '../router.js';

export const offerRoutes = [
  route({
    path: 'offer_job',
    summary:
      'The hub offers a run that only one daemon may take; the daemon claims it on the hub with its realm token. Losing the race answers claimed: false.',
    transactional: false,
    input: z.looseObject({
      queue_item_id: z.string().min(1),
      daemon_id: z.string().min(1).optional(),
      kind: z.string().optional(),
      payload: z.record(z.string(), z.unknown()).optional(),
      tx_id: z.string().optional(),
    }),
    async handler(ctx, input) {
      const daemonId = input.daemon_id ?? ctx.identity.daemonId;
      if (!daemonId) {
        throw new DaemonError('DAEMON_ID_UNKNOWN', 'this daemon has no id yet and none was sent');
      }
      if (!ctx.hub.hasCredentials) {
        throw new DaemonError(
          'HUB_CREDENTIALS_MISSING',
          'this daemon has no hub URL and realm token to claim with',
        );
      }
      const teamId = typeof input.payload?.team_id === 'string' ? input.payload.team_id : undefined;
      ctx.log.info({ queue_item_id: input.queue_item_id, kind: input.kind, team_id: teamId }, 'job offered');
      try {
        const { claimed } = await ctx.hub.claim(input.queue_item_id, daemonId);
        ctx.log.info({ queue_item_id: input.queue_item_id, claimed }, 'claim answered');
        return { claimed, daemon_id: daemonId };
      } catch (err) {
        if (err instanceof HubRefusedError) {
          throw new DaemonError('CLAIM_FAILED', `the hub refused the claim: ${err.message}`, {
            hub_status: err.status,
            hub_code: err.hubCode,
          });
        }
        if (err instanceof HubUnreachableError) {
          ctx.log.warn({ err }, 'claim failed: hub unreachable');
          throw new DaemonError('INTERNAL_ERROR', 'the hub could not be reached');
        }
        throw err;
      }
    },
  }),
];
