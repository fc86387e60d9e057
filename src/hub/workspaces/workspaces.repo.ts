import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { WorkspacesTable } from '../../db/schema.js';
import { conflict, notFound } from '../../shared/errors.js';
import type { Hub } from '../context.js';
import { withdrawCommand } from '../daemons/await-command.js';
import { inTx } from '../daemons/commands.js';

/**
 * Workspace rows. A workspace of an offline daemon is `pending` with the `workspaces/register`
 * command it waits for; `settleWorkspaces` applies that command's ack (`ready`, or `failed` with
 * the daemon's error) whenever workspaces are read, in any hub process, as installs do.
 */

export async function loadWorkspace(hub: Pick<Hub, 'db'>, workspaceId: string): Promise<WorkspacesTable> {
  const w = await hub.db
    .selectFrom('workspaces')
    .selectAll()
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  if (!w) throw notFound('workspace');
  return w;
}

export function findByPath(hub: Pick<Hub, 'db'>, daemonId: string, p: string) {
  return hub.db
    .selectFrom('workspaces')
    .selectAll()
    .where('daemon_id', '=', daemonId)
    .where('path', '=', p)
    .executeTakeFirst();
}

/** Applies the acks of pending registrations (a row changes only while it waits for that tx_id). */
export async function settleWorkspaces(
  hub: Pick<Hub, 'db' | 'now'>,
  filter: { workspaceId?: string; daemonId?: string; realmId?: string },
): Promise<void> {
  const rows = await hub.db
    .selectFrom('workspaces as w')
    .innerJoin('command_outbox as c', 'c.tx_id', 'w.pending_tx_id')
    .select(['w.id', 'c.tx_id', 'c.ack_status', 'c.error', 'c.acked_at'])
    .where('c.status', '=', 'acked')
    .$if(filter.workspaceId !== undefined, (q) => q.where('w.id', '=', filter.workspaceId!))
    .$if(filter.daemonId !== undefined, (q) => q.where('w.daemon_id', '=', filter.daemonId!))
    .$if(filter.realmId !== undefined, (q) => q.where('w.realm_id', '=', filter.realmId!))
    .execute();
  for (const r of rows) {
    const ok = r.ack_status === 'ok';
    await hub.db
      .updateTable('workspaces')
      .set({
        status: ok ? 'ready' : 'failed',
        error: ok ? null : (r.error ?? JSON.stringify({ code: 'ERROR', message: 'the daemon refused it' })),
        pending_tx_id: null,
        updated_at: r.acked_at ?? hub.now(),
      })
      .where('id', '=', r.id)
      .where('pending_tx_id', '=', r.tx_id)
      .execute();
  }
}

/** The workspace, settled; `conflict` unless its daemon has accepted it. */
export async function requireReadyWorkspace(hub: Pick<Hub, 'db' | 'now'>, workspaceId: string) {
  await settleWorkspaces(hub, { workspaceId });
  const w = await loadWorkspace(hub, workspaceId);
  if (w.status === 'pending') {
    throw conflict(`workspace ${w.name} is pending: its daemon has not checked ${w.path} yet`, {
      status: w.status,
    });
  }
  if (w.status === 'failed') {
    const e = w.error ? (JSON.parse(w.error) as { message?: string }) : null;
    throw conflict(`workspace ${w.name} failed: ${e?.message ?? 'its daemon refused it'}`, {
      status: w.status,
      error: e,
    });
  }
  return w;
}

type WorkspaceState = Pick<WorkspacesTable, 'status' | 'error' | 'pending_tx_id'>;
type Daemon = { id: string; realm_id: string };

/**
 * Inserts the workspace (unless `existing` says its (daemon, path) is there), or renames the one
 * there and sets its state; the unique (daemon, path) decides a race. True when it inserted.
 */
async function saveWorkspace(
  db: Kysely<DB>,
  daemon: Daemon,
  w: { id: string; path: string; name: string; existing: WorkspacesTable | undefined },
  state: WorkspaceState,
  now: number,
): Promise<boolean> {
  if (!w.existing) {
    const inserted = await db
      .insertInto('workspaces')
      .values({
        id: w.id,
        daemon_id: daemon.id,
        realm_id: daemon.realm_id,
        path: w.path,
        name: w.name,
        team_ids: '[]',
        ...state,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(['daemon_id', 'path']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return true;
  }
  await db
    .updateTable('workspaces')
    .set({ name: w.name, ...state, updated_at: now })
    .where('daemon_id', '=', daemon.id)
    .where('path', '=', w.path)
    .execute();
  return false;
}

/**
 * Records a workspace of an offline daemon as `pending`, with the command its daemon gets on
 * connecting, in one transaction (a repeat replaces the command it waited for). Returns the row.
 */
export async function registerPending(
  hub: Hub,
  daemon: Daemon,
  w: { id: string; path: string; requestedPath: string; name: string; existing: WorkspacesTable | undefined },
): Promise<WorkspacesTable> {
  const replaced = await inTx(hub, async ({ db: trx, command }) => {
    const txId = await command(daemon.id, 'workspaces/register', {
      id: w.id,
      path: w.requestedPath,
      name: w.name,
    });
    const before = await findByPath({ db: trx }, daemon.id, w.path);
    await saveWorkspace(trx, daemon, w, { status: 'pending', error: null, pending_tx_id: txId }, hub.now());
    return before?.pending_tx_id ?? null;
  });
  // The command an earlier registration waited for is no longer needed.
  if (replaced) await withdrawCommand(hub, replaced);
  return (await findByPath(hub, daemon.id, w.path))!;
}

/** Records what an online daemon accepted: a new row, or the existing one `ready` again. */
export async function recordAccepted(
  hub: Pick<Hub, 'db' | 'now'>,
  daemon: Daemon,
  w: { id: string; path: string; name: string; existing: WorkspacesTable | undefined },
): Promise<{ row: WorkspacesTable; created: boolean }> {
  const ready = { status: 'ready' as const, error: null, pending_tx_id: null };
  const created = await saveWorkspace(hub.db, daemon, w, ready, hub.now());
  return { row: (await findByPath(hub, daemon.id, w.path))!, created };
}
