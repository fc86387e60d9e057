import { z } from 'zod';
import { ms } from './envelope.js';

/**
 * The daemon API's replies (`{ok: true, data}`), by route path. The daemon's routes are typed by
 * them and its `/openapi.json` describes them (src/daemon/openapi.ts).
 */

/** A workspace as the daemon keeps it. */
export const LocalWorkspace = z.strictObject({
  id: z.string(),
  path: z.string(),
  name: z.string(),
  team_ids: z.array(z.string()),
  created_at: ms,
  updated_at: ms,
});
export type LocalWorkspace = z.infer<typeof LocalWorkspace>;

export const DAEMON_REPLIES = {
  'teams/install': z.strictObject({
    team_version_id: z.string(),
    name: z.string(),
    version: z.string(),
    installed: z.boolean(),
  }),
  'teams/uninstall': z.strictObject({ team_version_id: z.string(), removed: z.boolean() }),
  'teams/list': z.strictObject({
    teams: z.array(
      z.strictObject({
        team_version_id: z.string(),
        team_id: z.string(),
        name: z.string(),
        version: z.string(),
        phases: z.array(z.string()),
        agents: z.array(z.string()),
        teams: z.array(z.string()),
      }),
    ),
  }),
  'workspaces/register': LocalWorkspace.extend({ created: z.boolean() }),
  'workspaces/assign_teams': LocalWorkspace,
  'workspaces/unregister': z.strictObject({
    path: z.string().nullable(),
    removed: z.boolean(),
    /** Whether the hub removed its record too (null: not asked, or it could not be reached). */
    hub_removed: z.boolean().nullable(),
    hub_error: z.string().nullable(),
  }),
  'workspaces/list': z.strictObject({ workspaces: z.array(LocalWorkspace) }),
  'hug/deliver': z.strictObject({ review_id: z.string(), queued: z.boolean() }),
  'hug/poll_verdict': z.strictObject({
    entries: z.array(
      z.strictObject({
        type: z.string(),
        role: z.string(),
        payload: z.record(z.string(), z.unknown()),
        created_at: ms,
      }),
    ),
  }),
  'hug/request': z.strictObject({ review_id: z.string(), round: z.number(), deadline_at: ms.nullable() }),
  offer_job: z.strictObject({ claimed: z.boolean(), daemon_id: z.string() }),
  'runs/execute': z.strictObject({ accepted: z.boolean(), already_running: z.boolean() }),
  'runs/cancel': z.strictObject({ acknowledged: z.literal(true), active: z.boolean() }),
  'runs/child_ended': z.strictObject({ received: z.literal(true) }),
  'tokens/create': z.strictObject({ token: z.string(), expires_at: ms }),
} as const;

export type DaemonRoutePath = keyof typeof DAEMON_REPLIES;
export type DaemonReply<P extends DaemonRoutePath> = z.output<(typeof DAEMON_REPLIES)[P]>;
