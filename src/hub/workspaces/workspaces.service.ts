import path from 'node:path';
import type { WorkspacesTable } from '../../db/schema.js';
import type { Workspace } from '../../shared/api/daemons.js';
import type { CommandResult } from '../ports.js';

/**
 * Workspaces: directories on a daemon's machine. The daemon decides whether a path is usable; the
 * hub records what the daemon accepted, or, for an offline daemon, a `pending` workspace that its
 * daemon checks when it connects (`ready`, or `failed` with the daemon's error).
 */

/** An absolute POSIX path without `.`/`..` segments or a trailing slash (the daemon does the same). */
export function normalizeWorkspacePath(p: string): string {
  if (!p.startsWith('/')) return p; // the daemon refuses it with WORKSPACE_INVALID
  const n = path.posix.normalize(p);
  return n.length > 1 ? n.replace(/\/+$/, '') : n;
}

export function workspaceOut(w: WorkspacesTable): Workspace {
  return {
    id: w.id,
    daemon_id: w.daemon_id,
    realm_id: w.realm_id,
    path: w.path,
    name: w.name,
    team_ids: JSON.parse(w.team_ids) as string[],
    status: w.status,
    error: w.error === null ? null : (JSON.parse(w.error) as { code: string; message: string }),
    created_at: w.created_at,
    updated_at: w.updated_at,
  };
}

/** The daemon's answer to `workspaces/register`, when it accepted the path. */
export function acceptedPath(result: CommandResult, fallback: string): string {
  const reply = result.reply as { path?: unknown } | null;
  return typeof reply?.path === 'string' ? reply.path : fallback;
}
