import { authOps } from './auth/auth.routes.js';
import type { Op } from './http/op.js';

/** Every hub operation. A feature adds its list here. */
export const hubOps: Op[] = [...authOps];
