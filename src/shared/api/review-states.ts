/**
 * A review's states and the actions a person takes on one (docs/api.md "Reviews"), without the reply
 * schemas of ./reviews.ts: the hub needs the names from its start, the schemas only for the OpenAPI
 * document and the clients.
 */
export const REVIEW_STATES = [
  'open',
  'approved',
  'rejected',
  'changes_requested',
  'expired',
  'cancelled',
] as const;
export type ReviewState = (typeof REVIEW_STATES)[number];

export const REVIEW_ACTIONS = ['approve', 'reject', 'request_changes', 'comment'] as const;
export type ReviewAction = (typeof REVIEW_ACTIONS)[number];
