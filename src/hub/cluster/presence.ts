import { hostname } from 'node:os';
import { updateOne } from '../../db/index.js';
import type { Hub } from '../context.js';
import { recordEvent } from '../events/events.js';

/**
 * Presence of hub processes. Each process has a `hub_instances` row with a heartbeat, and every
 * daemon connected to it records the process in `daemons.hub_instance_id`. A process that dies
 * without closing its connections (SIGKILL, a lost machine) leaves its daemons `online`; the others
 * notice its stale heartbeat and mark those daemons offline (`daemon.disconnected` once), unless a
 * daemon already reconnected elsewhere. Every step is a conditional write, so several processes may
 * run the pass at the same moment and only one acts.
 */

export async function registerInstance(hub: Hub, id: string): Promise<void> {
  const now = hub.now();
  await hub.db
    .insertInto('hub_instances')
    .values({ id, host: hostname(), pid: process.pid, started_at: now, heartbeat_at: now })
    .execute();
}

/** Records this process's heartbeat; false when its row is gone (others presumed it dead). */
export async function heartbeat(hub: Hub, id: string): Promise<boolean> {
  return updateOne(hub.db.updateTable('hub_instances').set({ heartbeat_at: hub.now() }).where('id', '=', id));
}

interface HeldDaemon {
  id: string;
  realm_id: string;
  org_id: string;
  connection_id: string | null | undefined;
  hub_instance_id: string | null | undefined;
}

/** Marks one daemon offline if it is still held by that instance with that connection. */
async function markOffline(hub: Hub, d: HeldDaemon, why: string): Promise<boolean> {
  return hub.db.transaction().execute(async (trx) => {
    const marked = await updateOne(
      trx
        .updateTable('daemons')
        .set({ status: 'offline', connection_id: null, hub_instance_id: null })
        .where('id', '=', d.id)
        .where('status', '=', 'online')
        .where('hub_instance_id', '=', d.hub_instance_id!)
        .where((eb) =>
          d.connection_id == null
            ? eb('connection_id', 'is', null)
            : eb('connection_id', '=', d.connection_id),
        ),
    );
    if (!marked) return false;
    await recordEvent(trx, hub, {
      type: 'daemon.disconnected',
      org_id: d.org_id,
      realm_id: d.realm_id,
      subject_id: d.id,
      payload: {
        daemon_id: d.id,
        connection_id: d.connection_id ?? null,
        hub_instance_id: d.hub_instance_id,
        reason: why,
      },
    });
    return true;
  });
}

function heldBy(hub: Hub) {
  return hub.db
    .selectFrom('daemons as d')
    .innerJoin('realms as r', 'r.id', 'd.realm_id')
    .select(['d.id', 'd.realm_id', 'r.org_id', 'd.connection_id', 'd.hub_instance_id'])
    .where('d.status', '=', 'online');
}

/**
 * One pass: removes the rows of instances whose heartbeat is older than `instanceStaleMs` and marks
 * their daemons offline; also daemons held by an instance that has no row at all (it stopped but
 * could not record its daemons offline). Answers how many daemons went offline.
 */
export async function reapStaleInstances(hub: Hub): Promise<number> {
  const now = hub.now();
  const cutoff = now - hub.config.instanceStaleMs;
  const stale = await hub.db
    .selectFrom('hub_instances')
    .select('id')
    .where('heartbeat_at', '<', cutoff)
    // Never this process itself, however late its own heartbeat is.
    .where('id', '!=', hub.tunnel.instanceId)
    .limit(100)
    .execute();
  let offline = 0;
  for (const inst of stale) {
    // Whoever deletes the row handles the instance; the others find nothing to delete.
    const del = await hub.db
      .deleteFrom('hub_instances')
      .where('id', '=', inst.id)
      .where('heartbeat_at', '<', cutoff)
      .executeTakeFirst();
    if (Number(del.numDeletedRows) !== 1) continue;
    hub.log.warn(
      { hub_instance_id: inst.id },
      'a hub process stopped sending heartbeats; its daemons go offline',
    );
    const daemons = await heldBy(hub).where('d.hub_instance_id', '=', inst.id).execute();
    for (const d of daemons) if (await markOffline(hub, d, 'hub_instance_lost')) offline++;
  }
  // Daemons whose instance row is gone: the deleter above crashed midway, or a stopping process
  // could not record them offline. Conditional as well, so a reconnect elsewhere always wins.
  const orphans = await heldBy(hub)
    .where('d.hub_instance_id', 'is not', null)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('hub_instances as h').select('h.id').whereRef('h.id', '=', 'd.hub_instance_id'))),
    )
    .limit(500)
    .execute();
  for (const d of orphans) if (await markOffline(hub, d, 'hub_instance_lost')) offline++;
  return offline;
}

export interface Presence {
  /** Stops the heartbeat and removes this process's row (call after the tunnel has closed). */
  stop(): Promise<void>;
}

/**
 * Registers this hub process and starts its heartbeat and the stale-instance pass. When the
 * heartbeat finds the row gone (this process was presumed dead, e.g. after a long pause), it
 * registers again and drops its connections, so that the daemons come back with a fresh presence.
 */
export async function startPresence(hub: Hub): Promise<Presence> {
  const id = hub.tunnel.instanceId;
  await registerInstance(hub, id);
  let running: Promise<void> | null = null;
  let stopped = false;
  const pass = async () => {
    if (!(await heartbeat(hub, id)) && !stopped) {
      hub.log.warn(
        { hub_instance_id: id },
        'this hub process was presumed dead by another; registering again and dropping its connections',
      );
      await registerInstance(hub, id);
      hub.tunnel.disconnectAll('the hub process was presumed dead; reconnect');
    }
    if (!stopped) await reapStaleInstances(hub);
  };
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = pass()
      .catch((err) => hub.log.error({ err }, 'hub presence pass failed'))
      .finally(() => {
        running = null;
      });
  }, hub.config.instanceHeartbeatMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      // Best effort: a row left behind (the database is gone) is removed by the others once stale.
      await hub.db
        .deleteFrom('hub_instances')
        .where('id', '=', id)
        .execute()
        .catch((err) => hub.log.warn({ err }, 'could not remove this hub process from hub_instances'));
    },
  };
}
