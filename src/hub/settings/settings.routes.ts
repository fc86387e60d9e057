import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import { requireSiteAdmin } from '../access/access.service.js';
import { cursor, limit, op } from '../http/op.js';
import { decodeCursor, pageOf } from '../http/paging.js';
import { deleteSetting, findSetting, GLOBAL, listSettings, putSetting, settingOut } from './settings.repo.js';

const KEY_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;
const key = z
  .string()
  .min(1, 'must not be empty')
  .max(200)
  .regex(
    KEY_PATTERN,
    'lowercase letters, digits, dots, underscores and hyphens, starting with a letter or digit',
  );
const value = z.string().max(64 * 1024);

/** Settings whose value has a form; others are free text read by their feature. */
const DAYS = {
  test: (v: string) => v.trim() !== '' && Number.isFinite(Number(v)) && Number(v) > 0,
  message: 'must be a number of days greater than 0 (remove the setting to keep everything)',
};
const VALUE_RULES: Record<string, { test(v: string): boolean; message: string }> = {
  'retention.runs_days': DAYS,
  'retention.logs_days': DAYS,
  'retention.artifacts_days': DAYS,
};

export const settingOps = [
  op({
    name: 'settings/set',
    summary: 'Sets a deployment-wide setting (site administrator).',
    input: z.object({ key, value }),
    async handler(ctx, input) {
      requireSiteAdmin(ctx.actor);
      const rule = VALUE_RULES[input.key];
      if (rule && !rule.test(input.value)) {
        throw new AppError('invalid_params', `value: ${rule.message}`, {
          issues: [{ field: 'value', message: rule.message }],
        });
      }
      const row = { daemon_id: GLOBAL, key: input.key, value: input.value, updated_at: ctx.now() };
      await putSetting(ctx.db, row);
      return { data: settingOut(row) };
    },
  }),
  op({
    name: 'settings/get_by_key',
    summary: 'A deployment-wide setting, or setting: null (site administrator, or any realm token).',
    input: z.object({ key }),
    async handler(ctx, input) {
      if (!ctx.actor) throw new AppError('unauthorized', 'authentication required');
      // Daemons read deployment-wide settings with their realm token.
      if (ctx.actor.kind !== 'daemon') requireSiteAdmin(ctx.actor);
      const row = await findSetting(ctx.db, input.key);
      return { setting: row ? settingOut(row) : null };
    },
  }),
  op({
    name: 'settings/remove',
    summary: 'Removes a deployment-wide setting; removed: false when it was not set.',
    input: z.object({ key }),
    async handler(ctx, input) {
      requireSiteAdmin(ctx.actor);
      return { removed: await deleteSetting(ctx.db, input.key) };
    },
  }),
  op({
    name: 'settings/list',
    summary: 'Every deployment-wide setting, ordered by key (site administrator).',
    input: z.object({ limit, cursor }),
    async handler(ctx, input) {
      requireSiteAdmin(ctx.actor);
      const after = decodeCursor(input.cursor, KEY_PATTERN);
      const rows = await listSettings(ctx.db, after, input.limit + 1);
      const page = pageOf(rows, input.limit, (r) => r.key);
      return { data: page.data.map(settingOut), next_cursor: page.next_cursor };
    },
  }),
];
