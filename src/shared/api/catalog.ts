import { z } from 'zod';
import { ms } from './envelope.js';

/** The catalog: agents and team versions of an organization (docs/api.md "Catalog"). */

/** An agent version; `manifest` (the normalized manifest) in the replies about one agent only. */
export const Agent = z.strictObject({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  version: z.string(),
  description: z.string(),
  agent_type: z.string(),
  is_system: z.boolean(),
  created_at: ms,
  updated_at: ms,
  manifest: z.unknown().optional(),
});
export type Agent = z.infer<typeof Agent>;

/** A phase of a stored team definition: every reference pinned (`agent_id` / `team_version_id`). */
export const PhaseDef = z.looseObject({
  name: z.string(),
  agent: z.string().optional(),
  team: z.string().optional(),
  agent_id: z.string().optional(),
  team_version_id: z.string().optional(),
  foreach: z.string().optional(),
  review: z.boolean().optional(),
});
export type PhaseDef = z.infer<typeof PhaseDef>;

export const TeamDefinition = z.looseObject({
  name: z.string(),
  version: z.string(),
  description: z.string(),
  phases: z.array(PhaseDef),
});

/** A team version (`id` and `team_version_id` are the same; `team_id` is stable across versions). */
export const TeamVersion = z.strictObject({
  id: z.string(),
  team_id: z.string(),
  team_version_id: z.string(),
  org_id: z.string(),
  name: z.string(),
  version: z.string(),
  description: z.string(),
  definition: TeamDefinition,
  created_at: ms,
  updated_at: ms,
});
export type TeamVersion = z.infer<typeof TeamVersion>;
