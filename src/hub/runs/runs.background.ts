import { groupCalls } from '../../shared/group-calls.js';
import { settleInstallAck } from '../catalog/installs.service.js';
import type { Hub } from '../context.js';
import { PRESENCE_WINDOW_MS } from '../daemons/presence.js';
import { CANCEL_COMMAND } from './control.service.js';
import { onCommandAck, sweepLeases } from './daemon.service.js';
import { onDaemonsConnected, onTeamInstalled } from './dispatch.service.js';
import { redispatchRuns } from './redispatch.service.js';

/**
 * The runs engine's background work in one hub process: the lease sweeper and the re-dispatch pass
 * (safe with several hub processes: each move is a conditional UPDATE), dispatch of queued runs
 * when a daemon connects or a team is installed, and cancel acknowledgements. Returns a stop function that waits for work
 * in progress.
 */
export function startRunsBackground(hub: Hub, sweepMs: number): () => Promise<void> {
  const inflight = new Set<Promise<unknown>>();
  let stopped = false;
  const track = (what: string, p: Promise<unknown>) => {
    if (stopped) return;
    const q = p.catch((err) => hub.log.error({ err }, `${what} failed`));
    inflight.add(q);
    void q.finally(() => inflight.delete(q));
  };
  // Daemons that connect together (a reconnect storm) are dispatched to together.
  const connected = groupCalls(
    async (daemons: { daemonId: string; onlineAt: number }[]) => {
      await onDaemonsConnected(hub, daemons);
      return daemons.map(() => undefined);
    },
    500,
    { windowMs: PRESENCE_WINDOW_MS },
  );
  const onConnected = (e: { daemon_id: string; online_at: number }) =>
    track('dispatch on connect', connected({ daemonId: e.daemon_id, onlineAt: e.online_at }));
  const onAck = (r: { path: string; tx_id: string; status: 'ok' | 'error'; reply?: unknown }) => {
    // Only a cancel is a run's pending control: other acks (offers, runs/execute) need no lookup.
    if (r.path === CANCEL_COMMAND) track('cancel acknowledgement', onCommandAck(hub, r.tx_id, r.status));
    // The daemon's reply to teams/install says `installed: true` (DAEMON_REPLIES).
    if (r.status === 'ok' && (r.reply as { installed?: unknown } | null)?.installed === true) {
      track('dispatch on install', afterInstall(hub, r.tx_id));
    }
  };
  hub.tunnel.events.on('connected', onConnected);
  hub.tunnel.events.on('ack', onAck);
  let sweeping = false;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    track(
      'lease sweep',
      sweepLeases(hub).finally(() => {
        sweeping = false;
      }),
    );
  }, sweepMs);
  timer.unref();
  // Offers nobody took, claims never started, queued runs left behind (redispatch.service.ts).
  let redispatching = false;
  const redispatch = setInterval(() => {
    if (redispatching) return;
    redispatching = true;
    track(
      're-dispatch',
      redispatchRuns(hub)
        .then(() => hub.runMetrics.refresh(hub.db))
        .finally(() => {
          redispatching = false;
        }),
    );
  }, hub.config.runRedispatchMs);
  redispatch.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    clearInterval(redispatch);
    hub.tunnel.events.off('connected', onConnected);
    hub.tunnel.events.off('ack', onAck);
    await Promise.all([...inflight]);
  };
}

/** A confirmed install may let queued runs of the realm go. */
async function afterInstall(hub: Hub, txId: string): Promise<void> {
  const installed = await settleInstallAck(hub, txId);
  if (installed) await onTeamInstalled(hub, installed.realm_id, installed.team_version_id);
}
