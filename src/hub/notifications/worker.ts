import { sql } from 'kysely';
import { updateOne } from '../../db/index.js';
import type { NotificationDeliveriesTable } from '../../db/schema.js';
import type { Hub } from '../context.js';
import { getSetting } from '../settings/settings.repo.js';
import { backoffMs, classify, type Outcome } from './policy.js';
import { type SendRequest, type SendResult, sendOnce } from './sender.js';
import { signBody } from './signing.js';
import type { LookupAll } from './ssrf.js';

const CLOSE_GRACE_MS = 2_000;

export const ALLOW_PRIVATE_SETTING = 'notifications.allow_private_destinations';

/**
 * The delivery worker of one hub process. It polls the outbox, claims due deliveries (PostgreSQL:
 * `FOR UPDATE SKIP LOCKED`; SQLite: one atomic conditional UPDATE … RETURNING), each with a lease,
 * so several hub processes share the work and a crashed process's claims come back when their
 * lease runs out. At-least-once: a delivery is marked done only after the receiver's 2xx.
 */
export interface DeliveryWorker {
  /** Polls now (e.g. after committing a test delivery). */
  wake(): void;
  /**
   * Stops polling and waits for attempts in flight, aborting those still running after a grace
   * period (their claims are released, not counted).
   */
  close(): Promise<void>;
}

export interface WorkerOptions {
  lookup?: LookupAll;
  random?: () => number;
  send?: (req: SendRequest) => Promise<SendResult>;
}

// The workers of this process by database handle, so an operation can wake them after committing.
const workers = new WeakMap<object, Set<DeliveryWorker>>();

/** Wakes this process's delivery workers on `db` (no-op when none runs, e.g. in unit tests). */
export function wakeDeliveryWorkers(db: object): void {
  for (const w of workers.get(db) ?? []) w.wake();
}

export function startDeliveryWorker(hub: Hub, opts: WorkerOptions = {}): DeliveryWorker {
  const cfg = hub.config;
  const abort = new AbortController();
  const random = opts.random ?? Math.random;
  const send = opts.send ?? sendOnce;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  let closed = false;

  function schedule(ms: number) {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(poll, ms);
  }

  function poll() {
    timer = null;
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = tick()
      .catch((err) => hub.log.error({ err }, 'notification delivery poll failed'))
      .finally(() => {
        running = null;
        const now = again;
        again = false;
        schedule(now ? 0 : cfg.notifyPollMs);
      });
  }

  async function tick() {
    const rows = await claimDue(hub, cfg.notifyBatchSize);
    if (rows.length === 0) return;
    const allowPrivate = (await getSetting(hub, ALLOW_PRIVATE_SETTING))?.trim().toLowerCase() === 'true';
    await Promise.all(rows.map((r) => attempt(r, allowPrivate)));
    if (rows.length === cfg.notifyBatchSize) again = true;
  }

  async function attempt(d: NotificationDeliveriesTable, allowPrivate: boolean) {
    try {
      const ch = await hub.db
        .selectFrom('notification_channels')
        .select(['id', 'enabled', 'secret'])
        .where('id', '=', d.channel_id)
        .executeTakeFirst();
      if (!ch) return; // removed with its deliveries
      if (ch.enabled !== 1 && d.kind !== 'test') {
        await finish(d, 'cancelled', { status: null, latencyMs: 0, error: 'channel is disabled' }, null);
        return;
      }
      const timestamp = hub.now();
      const res = await send({
        url: d.url,
        body: d.body,
        headers: {
          'x-svc-timestamp': String(timestamp),
          'x-svc-signature': signBody(hub.cipher.reveal(ch.secret), timestamp, d.body),
          'idempotency-key': d.id,
          'x-svc-delivery': d.id,
          'x-svc-event': d.event_type,
        },
        timeoutMs: cfg.notifyTimeoutMs,
        allowPrivate,
        signal: abort.signal,
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
      });
      if (res.aborted) {
        await release(d);
        return;
      }
      const outcome: Outcome = res.refused ? 'permanent' : classify(res.status);
      const n = d.attempts + 1;
      if (outcome === 'retry' && n < cfg.notifyMaxAttempts) {
        await finish(
          d,
          'pending',
          res,
          outcome,
          hub.now() + backoffMs(n, cfg.notifyRetryBaseMs, cfg.notifyRetryCapMs, random()),
        );
      } else if (outcome === 'success') {
        await finish(d, 'succeeded', res, outcome);
      } else {
        const error =
          outcome === 'retry' ? `gave up after ${n} attempts; last: ${res.error ?? 'error'}` : res.error;
        await finish(d, 'failed', { ...res, error }, outcome === 'retry' ? 'retry' : 'permanent');
      }
    } catch (err) {
      hub.log.error({ err, delivery_id: d.id }, 'notification delivery failed unexpectedly');
      await release(d).catch(() => {});
    }
  }

  /** Gives a claimed delivery back untouched (shutdown). */
  async function release(d: NotificationDeliveriesTable) {
    await hub.db
      .updateTable('notification_deliveries')
      .set({ lease_owner: null, lease_until: null })
      .where('id', '=', d.id)
      .where('lease_owner', '=', d.lease_owner)
      .execute();
  }

  /** Records an attempt and the delivery's new state; updates the channel's failure count. */
  async function finish(
    d: NotificationDeliveriesTable,
    state: NotificationDeliveriesTable['state'],
    res: Pick<SendResult, 'status' | 'latencyMs' | 'error'>,
    outcome: Outcome | null,
    nextAt?: number,
  ) {
    const now = hub.now();
    await hub.db.transaction().execute(async (trx) => {
      const attempts = outcome ? d.attempts + 1 : d.attempts;
      const recorded = await updateOne(
        trx
          .updateTable('notification_deliveries')
          .set({
            state,
            attempts,
            next_attempt_at: nextAt ?? d.next_attempt_at,
            lease_owner: null,
            lease_until: null,
            last_status_code: res.status,
            last_latency_ms: res.latencyMs,
            last_error: res.error,
            updated_at: now,
            completed_at: state === 'pending' ? null : now,
          })
          .where('id', '=', d.id)
          .where('lease_owner', '=', d.lease_owner),
      );
      // Our lease ran out and another process took the delivery over: it records the outcome.
      if (!recorded || !outcome) return;
      await trx
        .insertInto('notification_attempts')
        .values({
          id: hub.newId(),
          delivery_id: d.id,
          attempt: attempts,
          outcome,
          status_code: res.status,
          latency_ms: res.latencyMs,
          error: res.error,
          at: now,
        })
        .execute();
      if (state === 'succeeded') {
        await trx
          .updateTable('notification_channels')
          .set({ consecutive_failures: 0 })
          .where('id', '=', d.channel_id)
          .where('consecutive_failures', '>', 0)
          .execute();
      } else if (state === 'failed') {
        await trx
          .updateTable('notification_channels')
          .set({ consecutive_failures: sql`consecutive_failures + 1` })
          .where('id', '=', d.channel_id)
          .execute();
        const disabled = await updateOne(
          trx
            .updateTable('notification_channels')
            .set({
              enabled: 0,
              updated_at: now,
              disabled_reason: `disabled automatically after ${cfg.notifyDisableAfter} consecutive failed deliveries; last: ${(res.error ?? 'error').slice(0, 300)}`,
            })
            .where('id', '=', d.channel_id)
            .where('enabled', '=', 1)
            .where('consecutive_failures', '>=', cfg.notifyDisableAfter),
        );
        if (disabled) {
          hub.log.warn({ channel_id: d.channel_id }, 'notification channel disabled after repeated failures');
        }
      }
    });
  }

  schedule(0);
  const worker: DeliveryWorker = {
    wake() {
      if (!closed && !running) schedule(0);
      else again = true;
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      workers.get(hub.db)?.delete(worker);
      // Attempts in flight may finish (and be recorded) for a moment; then they are aborted and
      // their claims released, to be sent again by the next process (same idempotency key).
      const grace = setTimeout(() => abort.abort(), Math.min(cfg.notifyTimeoutMs, CLOSE_GRACE_MS));
      await running;
      clearTimeout(grace);
      abort.abort();
    },
  };
  const set = workers.get(hub.db) ?? new Set<DeliveryWorker>();
  set.add(worker);
  workers.set(hub.db, set);
  return worker;
}

/** Claims up to `limit` due deliveries for this process (lease owner = a fresh id per claim). */
export async function claimDue(hub: Hub, limit: number): Promise<NotificationDeliveriesTable[]> {
  const now = hub.now();
  const owner = hub.newId();
  let due = hub.db
    .selectFrom('notification_deliveries')
    .select('id')
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit);
  if (hub.dialect === 'postgres') due = due.forUpdate().skipLocked();
  return hub.db
    .updateTable('notification_deliveries')
    .set({ lease_owner: owner, lease_until: now + hub.config.notifyLeaseMs })
    .where('id', 'in', due)
    .where('state', '=', 'pending')
    .returningAll()
    .execute();
}
