import { artifactOps } from './artifacts/artifacts.routes.js';
import { authOps } from './auth/auth.routes.js';
import { agentOps } from './catalog/agents.routes.js';
import { installOps } from './catalog/installs.routes.js';
import { teamOps } from './catalog/teams.routes.js';
import { daemonOps } from './daemons/daemons.routes.js';
import { groupOps } from './groups/groups.routes.js';
import type { Op } from './http/op.js';
import { meshOps } from './mesh/mesh.routes.js';
import { channelOps } from './notifications/channels.routes.js';
import { ruleOps } from './notifications/rules.routes.js';
import { orgOps } from './orgs/orgs.routes.js';
import { realmOps } from './realms/realms.routes.js';
import { reviewOps } from './reviews/reviews.routes.js';
import { runOps } from './runs/runs.routes.js';
import { scheduleOps } from './schedules/schedules.routes.js';
import { secretOps } from './secrets/secrets.routes.js';
import { settingOps } from './settings/settings.routes.js';
import { triggerOps } from './triggers/triggers.routes.js';
import { workspaceOps } from './workspaces/workspaces.routes.js';

/** Every hub operation. A feature adds its list here. */
export const hubOps: Op[] = [
  ...authOps,
  ...orgOps,
  ...realmOps,
  ...groupOps,
  ...daemonOps,
  ...settingOps,
  ...meshOps,
  ...channelOps,
  ...ruleOps,
  ...agentOps,
  ...teamOps,
  ...runOps,
  ...artifactOps,
  ...reviewOps,
  ...installOps,
  ...workspaceOps,
  ...secretOps,
  ...scheduleOps,
  ...triggerOps,
];
