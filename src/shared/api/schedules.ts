import { z } from 'zod';
import { ms } from './envelope.js';

/** Schedules, triggers and secrets (CONTRACT.md §10, §12): what their operations answer. */

/** What a schedule or trigger starts: the runs/new target it was given, and what it resolved to. */
const target = {
  team: z.string().optional(),
  team_id: z.string().nullable(),
  agent: z.string().optional(),
  agent_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  inputs: z.record(z.string(), z.unknown()),
};

export const Schedule = z.strictObject({
  id: z.string(),
  realm_id: z.string(),
  ...target,
  run_name: z.string().nullable(),
  reviewers: z.record(z.string(), z.array(z.string())).nullable(),
  cron: z.string(),
  timezone: z.string(),
  overlap: z.enum(['skip', 'queue', 'cancel_previous']),
  catch_up: z.enum(['none', 'latest', 'all']),
  enabled: z.boolean(),
  next_fire_at: ms.nullable(),
  last_fired_at: ms.nullable(),
  last_run_id: z.string().nullable(),
  created_at: ms,
  updated_at: ms,
});
export type Schedule = z.infer<typeof Schedule>;

export const Trigger = z.strictObject({
  id: z.string(),
  realm_id: z.string(),
  name: z.string(),
  ...target,
  /** Where senders POST (`/v1/hooks/<id>`). */
  url: z.string(),
  created_at: ms,
  updated_at: ms,
});
export type Trigger = z.infer<typeof Trigger>;

/** `triggers/new` and `triggers/rotate_secret`: the only replies that show the secret. */
export const TriggerWithSecret = Trigger.extend({ secret: z.string() });

export const TriggerDelivery = z.strictObject({
  id: z.string(),
  received_at: ms,
  outcome: z.enum(['started', 'repeated', 'refused']),
  http_status: z.number(),
  error: z.string().nullable(),
  run_id: z.string().nullable(),
});
export type TriggerDelivery = z.infer<typeof TriggerDelivery>;

/** `triggers/get`: the trigger and its newest deliveries. */
export const TriggerDetail = Trigger.extend({ recent_deliveries: z.array(TriggerDelivery) });
export type TriggerDetail = z.infer<typeof TriggerDetail>;

/** A secret's name and who set it; never its value. */
export const SecretSet = z.strictObject({
  name: z.string(),
  realm_id: z.string().nullable(),
  org_id: z.string(),
  updated_at: ms,
  updated_by: z.string().nullable(),
});
export const SecretName = SecretSet.extend({ created_at: ms });
export type SecretName = z.infer<typeof SecretName>;
