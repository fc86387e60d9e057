/** Notification channels, rules, deliveries and attempts. */

/** A notification channel: where events go (CONTRACT.md §7). `destinations` is JSON. */
export interface NotificationChannelsTable {
  id: string;
  scope: 'realm' | 'org' | 'personal';
  realm_id: string | null;
  org_id: string | null;
  user_id: string | null;
  /** The organization the channel belongs to (its own or its realm's); null for personal channels. */
  owner_org_id: string | null;
  name: string;
  destinations: string;
  enabled: number;
  /** The HMAC signing key (shown once at creation; see docs/security.md). */
  secret: string;
  system_key: string | null;
  locked: number;
  system_reason: string | null;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: number;
  updated_at: number;
}

export interface NotificationRulesTable {
  id: string;
  org_id: string;
  realm_id: string | null;
  event: string;
  filter_team_id: string | null;
  filter_state: string | null;
  system_key: string | null;
  locked: number;
  created_by: string | null;
  created_at: number;
}

export interface NotificationRuleChannelsTable {
  rule_id: string;
  channel_id: string;
}

/** The notification outbox: one row per (event, channel destination). */
export interface NotificationDeliveriesTable {
  id: string;
  channel_id: string;
  event_id: string;
  event_type: string;
  kind: 'event' | 'test';
  destination_index: number;
  destination_type: string;
  url: string;
  body: string;
  state: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export interface NotificationAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  outcome: 'success' | 'retry' | 'permanent';
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  at: number;
}
