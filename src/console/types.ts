/** The hub API's shapes as the console reads them: the API module's (src/shared/api/). */

export type {
  Org,
  OrgMember,
  Realm,
  RealmMember,
  RealmRole,
  Token,
  User,
} from '../shared/api/access.js';
export type OrgRole = import('../shared/api/access.js').OrgMember['role'];
export type { Agent, PhaseDef, TeamVersion } from '../shared/api/catalog.js';
export type { Daemon, TeamInstall, Workspace } from '../shared/api/daemons.js';
export type { Channel, Delivery, Rule } from '../shared/api/notifications.js';
export type { Review, ReviewAction, ReviewState } from '../shared/api/reviews.js';
export type {
  Actor,
  ForceTerminate,
  HistoryEntry,
  LogLine,
  PendingControl,
  Run,
} from '../shared/api/runs.js';
export type {
  Schedule,
  SecretName,
  Trigger,
  TriggerDelivery,
  TriggerDetail,
} from '../shared/api/schedules.js';
