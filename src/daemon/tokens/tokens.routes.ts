import { z } from 'zod';
import { route } from '../router.js';
import { createLocalToken } from './local-tokens.repo.js';

const HOUR = 60 * 60 * 1000;

export const tokensRoutes = [
  route({
    path: 'tokens/create',
    summary:
      'Mints a local token (svc_lt_…) that a caller on another host may use while the daemon is not connected to a hub. Local callers only.',
    input: z.object({
      ttl_ms: z
        .number()
        .int()
        .min(60_000)
        .max(30 * 24 * HOUR)
        .default(24 * HOUR),
    }),
    async handler(ctx, input) {
      return createLocalToken(ctx.db, ctx.now(), input.ttl_ms);
    },
  }),
];
