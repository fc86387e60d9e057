import { authOps } from './auth/auth.routes.js';
import { daemonOps } from './daemons/daemons.routes.js';
import type { Op } from './http/op.js';
import { orgOps } from './orgs/orgs.routes.js';
import { realmOps } from './realms/realms.routes.js';

/** Every hub operation. A feature adds its list here. */
export const hubOps: Op[] = [...authOps, ...orgOps, ...realmOps, ...daemonOps];
