import { z } from 'zod';
import { requireUser } from '../access/access.service.js';
import { op } from '../http/op.js';
import { getSetting } from '../settings/settings.repo.js';
import { ENABLED_ADAPTERS_SETTING, visibleAdapters } from './adapters.js';

export const meshOps = [
  op({
    name: 'mesh/adapters/list',
    summary: 'The mesh providers this hub supports, with the settings each needs, as far as the caller sees.',
    input: z.object({}),
    async handler(ctx) {
      const user = requireUser(ctx.actor);
      const enabled = await getSetting(ctx, ENABLED_ADAPTERS_SETTING);
      return { adapters: visibleAdapters(user.user.is_site_admin === 1, enabled) };
    },
  }),
];
