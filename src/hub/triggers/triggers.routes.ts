import { z } from 'zod';
import { id, name, op, paging } from '../http/op.js';
import { targetFields } from '../schedules/target.js';
import {
  listTriggers,
  newTrigger,
  removeTrigger,
  rotateSecret,
  showTrigger,
  updateTrigger,
  visibleTrigger,
} from './triggers.service.js';

/** Triggers (incoming webhooks, CONTRACT.md §10): realm operators+ manage them, realm members+ see them. */
export const triggerOps = [
  op({
    name: 'triggers/new',
    summary:
      'Makes an incoming webhook: POST /v1/hooks/<id>, signed with the secret (shown once), starts a run.',
    input: z.object({ realm_id: id, name, ...targetFields }),
    async handler(ctx, input) {
      ctx.status(201);
      return { data: await newTrigger(ctx, ctx.actor, input) };
    },
  }),
  op({
    name: 'triggers/list',
    summary: 'The triggers of a realm.',
    input: z.object({ realm_id: id, ...paging }),
    async handler(ctx, input) {
      return listTriggers(ctx, ctx.actor, input);
    },
  }),
  op({
    name: 'triggers/get',
    summary: 'A trigger, with its URL and its newest deliveries (never its secret).',
    input: z.object({ id }),
    async handler(ctx, input) {
      return {
        data: await showTrigger(ctx, await visibleTrigger(ctx, ctx.actor, input.id, 'schedules.view')),
      };
    },
  }),
  op({
    name: 'triggers/update',
    summary: 'Changes a trigger: name, what it starts, its workspace, its inputs.',
    input: z.object({ id, name: name.optional(), ...targetFields }),
    async handler(ctx, input) {
      return { data: await updateTrigger(ctx, ctx.actor, input) };
    },
  }),
  op({
    name: 'triggers/remove',
    summary: 'Removes a trigger (its URL stops working; its runs stay). Unknown → removed: false.',
    input: z.object({ id }),
    async handler(ctx, input) {
      return { removed: await removeTrigger(ctx, ctx.actor, input.id) };
    },
  }),
  op({
    name: 'triggers/rotate_secret',
    summary: "Replaces a trigger's signing secret at once; the reply carries the new one, once.",
    input: z.object({ id }),
    async handler(ctx, input) {
      return { data: await rotateSecret(ctx, ctx.actor, input.id) };
    },
  }),
];
