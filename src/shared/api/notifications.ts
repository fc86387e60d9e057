import { z } from 'zod';
import { ms } from './envelope.js';

/** Notification channels, rules and deliveries (CONTRACT §7; docs/api.md "Notifications"). */

export const Destination = z.strictObject({ type: z.string(), webhook_url: z.string() });

/** A channel; its signing secret only in the replies to `notification_channels/new` and `rotate_secret`. */
export const Channel = z.strictObject({
  id: z.string(),
  realm_id: z.string().nullable(),
  org_id: z.string().nullable(),
  user_id: z.string().nullable(),
  name: z.string(),
  destinations: z.array(Destination),
  enabled: z.boolean(),
  created_at: ms,
  updated_at: ms,
  rule_count: z.number(),
  system_key: z.string().nullable(),
  locked: z.boolean(),
  /** Why it was disabled automatically, else why it is locked (system channels). */
  lock_reason: z.string().nullable(),
});
export type Channel = z.infer<typeof Channel>;
export const ChannelWithSecret = Channel.extend({ secret: z.string() });

export const Rule = z.strictObject({
  id: z.string(),
  realm_id: z.string().nullable(),
  org_id: z.string().nullable(),
  event: z.string(),
  channel_ids: z.array(z.string()),
  filter: z.strictObject({ team_id: z.string().optional(), state: z.string().optional() }).nullable(),
  system_key: z.string().nullable(),
  locked: z.boolean(),
  created_by: z.string().nullable(),
  created_at: ms,
});
export type Rule = z.infer<typeof Rule>;

export const DeliveryState = z.enum(['pending', 'succeeded', 'failed', 'cancelled']);

export const Delivery = z.strictObject({
  id: z.string(),
  channel_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  test: z.boolean(),
  destination: z.strictObject({ index: z.number(), type: z.string(), webhook_url: z.string() }),
  state: DeliveryState,
  attempts: z.number(),
  last_status_code: z.number().nullable(),
  last_latency_ms: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: ms.nullable(),
  created_at: ms,
  updated_at: ms,
  completed_at: ms.nullable(),
  attempt_log: z.array(
    z.strictObject({
      attempt: z.number(),
      at: ms,
      outcome: z.enum(['success', 'retry', 'permanent']),
      status_code: z.number().nullable(),
      latency_ms: z.number(),
      error: z.string().nullable(),
    }),
  ),
});
export type Delivery = z.infer<typeof Delivery>;

/** `notification_channels/test`: the test event and its deliveries. */
export const ChannelTest = z.strictObject({ event_id: z.string(), deliveries: z.array(Delivery) });
