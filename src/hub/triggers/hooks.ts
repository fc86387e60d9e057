import type { FastifyInstance } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { jsonTextTooDeep, tooDeepMessage } from '../../shared/json-depth.js';
import type { Hub } from '../context.js';
import { recordEvent } from '../events/events.js';
import { statusOf } from '../http/errors.js';
import { verifySignature } from '../notifications/signing.js';
import { startRun } from '../runs/create.service.js';
import { json } from '../runs/run.mapper.js';
import { insertDelivery, loadTrigger } from './triggers.repo.js';

/**
 * `POST /v1/hooks/<trigger id>` (CONTRACT.md §10): an incoming webhook starts the trigger's run with
 * `inputs = {…trigger inputs, event: <the JSON body>}`. The sender signs `<X-Svc-Timestamp>.<raw
 * body>` with HMAC-SHA256 and the trigger's secret (X-Svc-Signature: sha256=<hex>); the hub
 * recomputes it and compares in constant time, and refuses timestamps more than 5 minutes away.
 * An unknown trigger, a missing or wrong signature or a stale timestamp answer 401 alike, and
 * nothing starts. `Idempotency-Key` acts as runs/new's idempotency_key; without one, the signature
 * is the key, so a replayed delivery answers the first run (200) instead of starting another.
 */

/** The largest body a trigger accepts. */
export const HOOK_BODY_LIMIT = 1024 * 1024;
export const HOOK_TOLERANCE_MS = 5 * 60_000;

export const triggerActor = (id: string) => ({ type: 'trigger' as const, trigger_id: id });

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export function registerHooks(app: FastifyInstance, hub: Hub): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: HOOK_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    scope.setErrorHandler((err, _req, _reply) => {
      if ((err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        throw new AppError('bad_request', 'request body is larger than 1 MB');
      }
      throw err;
    });
    scope.post<{ Params: { id: string } }>(
      '/v1/hooks/:id',
      { bodyLimit: HOOK_BODY_LIMIT },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const out = await receive(hub, req.params.id, raw, {
          timestamp: header(req.headers['x-svc-timestamp']),
          signature: header(req.headers['x-svc-signature']),
          idempotencyKey: header(req.headers['idempotency-key']),
        });
        return reply.status(out.created ? 201 : 200).send({ ok: true, data: { run_id: out.run_id } });
      },
    );
  });
}

const unauthorized = () =>
  new AppError('unauthorized', 'unknown trigger, or a missing, wrong or stale signature');

async function receive(
  hub: Hub,
  triggerId: string,
  raw: Buffer,
  h: { timestamp: string | undefined; signature: string | undefined; idempotencyKey: string | undefined },
): Promise<{ run_id: string; created: boolean }> {
  const trigger = triggerId.length <= 200 ? await loadTrigger(hub.db, triggerId) : undefined;
  if (!trigger) throw unauthorized();
  const receivedAt = hub.now();
  const log = (
    outcome: 'started' | 'repeated' | 'refused',
    status: number,
    error: string | null,
    runId: string | null,
  ) =>
    insertDelivery(hub.db, {
      id: hub.newId(),
      trigger_id: trigger.id,
      received_at: receivedAt,
      outcome,
      http_status: status,
      error,
      run_id: runId,
    });
  try {
    const text = raw.toString('utf8');
    if (
      !verifySignature(hub.cipher.reveal(trigger.secret), h, text, {
        now: receivedAt,
        toleranceMs: HOOK_TOLERANCE_MS,
      })
    ) {
      throw unauthorized();
    }
    if (h.idempotencyKey !== undefined && (h.idempotencyKey.length < 1 || h.idempotencyKey.length > 200)) {
      throw new AppError('bad_request', 'Idempotency-Key must be 1 to 200 characters');
    }
    const key = h.idempotencyKey ?? `hook:${trigger.id}:${h.signature}`;
    const event = parseEvent(text);
    const target = json<Record<string, string>>(trigger.target) ?? {};
    const started = await startRun(
      hub,
      { id: trigger.realm_id, org_id: trigger.org_id },
      { user_id: trigger.created_by_user_id, actor: triggerActor(trigger.id) },
      {
        ...target,
        workspace_id: trigger.workspace_id ?? undefined,
        inputs: { ...(json<Record<string, unknown>>(trigger.inputs) ?? {}), event },
        external_id: `trigger:${trigger.id}`,
        idempotency_key: key,
      },
      async (db, runId) => {
        await recordEvent(db, hub, {
          type: 'trigger.received',
          org_id: trigger.org_id,
          realm_id: trigger.realm_id,
          subject_id: trigger.id,
          payload: {
            trigger_id: trigger.id,
            trigger_name: trigger.name,
            run_id: runId,
            team_id: trigger.team_id,
          },
        });
        return true;
      },
    );
    const { run, created } = started!;
    await log(created ? 'started' : 'repeated', created ? 201 : 200, null, run.run_id);
    return { run_id: run.run_id, created };
  } catch (err) {
    const e = err instanceof AppError ? err : new AppError('internal_error', 'internal error');
    await log('refused', statusOf(e), e.message, null).catch(() => {});
    throw err;
  }
}

/** The body as JSON (an empty body is null); not JSON, or nested too deep, is bad_request. */
function parseEvent(text: string): unknown {
  if (text.trim() === '') return null;
  if (jsonTextTooDeep(text)) throw new AppError('bad_request', tooDeepMessage('request body'));
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AppError('bad_request', `request body is not valid JSON: ${(e as Error).message}`);
  }
}
