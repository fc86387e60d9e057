import { z } from 'zod';
import { conflict } from '../../shared/errors.js';
import { id, op, paging } from '../http/op.js';
import { fireSlot } from './fire.service.js';
import {
  CATCH_UPS,
  listSchedules,
  newSchedule,
  OVERLAPS,
  removeSchedule,
  scheduleOut,
  updateSchedule,
  visibleSchedule,
} from './schedules.service.js';
import { targetFields } from './target.js';

const handles = z.array(z.string().min(1).max(100)).max(100);
const fields = {
  ...targetFields,
  run_name: z.string().trim().min(1).max(200).nullable().optional(),
  reviewers: z.record(z.string(), handles).nullable().optional(),
  cron: z.string().trim().min(1).max(200),
  timezone: z.string().min(1).max(100).optional(),
  overlap: z.enum(OVERLAPS).optional(),
  catch_up: z.enum(CATCH_UPS).optional(),
  enabled: z.boolean().optional(),
};

/** Schedules (CONTRACT.md §10): realm operators+ manage them, realm members+ see them. */
export const scheduleOps = [
  op({
    name: 'schedules/new',
    summary: 'Makes a schedule: a cron expression (5 fields, or 6 with seconds) in a time zone starts runs.',
    input: z.object({ realm_id: id, ...fields }),
    async handler(ctx, input) {
      ctx.status(201);
      return { data: await newSchedule(ctx, ctx.actor, input) };
    },
  }),
  op({
    name: 'schedules/list',
    summary: 'The schedules of a realm.',
    input: z.object({ realm_id: id, ...paging }),
    async handler(ctx, input) {
      return listSchedules(ctx, ctx.actor, input);
    },
  }),
  op({
    name: 'schedules/get',
    summary: 'A schedule, with its next_fire_at.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { schedule } = await visibleSchedule(ctx, ctx.actor, input.id, 'schedules.view');
      return { data: scheduleOut(schedule) };
    },
  }),
  op({
    name: 'schedules/update',
    summary:
      'Changes a schedule; a changed time or a re-enabled schedule counts from now (enabled: false pauses it).',
    input: z.object({ id, ...fields, cron: fields.cron.optional() }),
    async handler(ctx, input) {
      return { data: await updateSchedule(ctx, ctx.actor, input) };
    },
  }),
  op({
    name: 'schedules/remove',
    summary: 'Removes a schedule (its runs stay). Unknown → removed: false.',
    input: z.object({ id }),
    async handler(ctx, input) {
      return { removed: await removeSchedule(ctx, ctx.actor, input.id) };
    },
  }),
  op({
    name: 'schedules/trigger',
    summary: 'Starts one run of the schedule now, whatever its time and overlap policy.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const { schedule } = await visibleSchedule(ctx, ctx.actor, input.id, 'schedules.manage');
      const started = await fireSlot(ctx, schedule, ctx.now(), 'manual');
      if (!started) throw conflict('the schedule was triggered at this very moment already; try again');
      ctx.status(201);
      return { data: started.run };
    },
  }),
];
