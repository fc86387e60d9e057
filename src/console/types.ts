/** The hub API's shapes as the console reads them: the API module's (src/shared/api/). */

export type { Org, Realm, RealmRole, User } from '../shared/api/access.js';
export type { Agent, PhaseDef, TeamVersion } from '../shared/api/catalog.js';
export type { Daemon, TeamInstall, Workspace } from '../shared/api/daemons.js';
export type { Channel, Delivery } from '../shared/api/notifications.js';
export type { Review, ReviewAction, ReviewState } from '../shared/api/reviews.js';
export type {
  Actor,
  ForceTerminate,
  HistoryEntry,
  LogLine,
  PendingControl,
  Run,
} from '../shared/api/runs.js';
export type { Schedule, Trigger, TriggerDelivery, TriggerDetail } from '../shared/api/schedules.js';
