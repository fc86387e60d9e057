/**
 * The vocabulary of notifications (CONTRACT.md §5, §7): the event kinds a rule may name, the run
 * states a rule may filter on, and the destination types of a channel.
 */
export const RUN_EVENT_KINDS = [
  'run.queued',
  'run.offered',
  'run.claimed',
  'run.assigned',
  'run.started',
  'phase.started',
  'phase.completed',
  'review.requested',
  'review.submitted',
  'run.resume_requested',
  'run.resumed',
  'run.cancel_requested',
  'run.lost',
  'run.ended',
] as const;

export const EVENT_KINDS = [
  ...RUN_EVENT_KINDS,
  'invite.sent',
  'invite.accepted',
  'daemon.connected',
  'daemon.disconnected',
  // A schedule's time came (or schedules/trigger): `status` started, skipped, waiting or failed.
  'schedule.fired',
  // An incoming webhook was accepted and started (or repeated) a run.
  'trigger.received',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

export const DESTINATION_TYPES = ['webhook', 'slack', 'discord'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export interface Destination {
  type: DestinationType;
  webhook_url: string;
}

/** The event type of a delivery made by `notification_channels/test`. */
export const TEST_EVENT = 'notification.test';

/** The system rule and channel every organization gets at creation. */
export const SYSTEM_INVITES_KEY = 'invite.sent';
