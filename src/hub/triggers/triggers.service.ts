import type { TriggersTable } from '../../db/schema.js';
import { notFound } from '../../shared/errors.js';
import type { RealmPermission } from '../../shared/permissions.js';
import { requireRealm, requireUser } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { newChannelSecret } from '../notifications/signing.js';
import { json } from '../runs/run.mapper.js';
import { checkTarget, retarget, type TargetInput } from '../schedules/target.js';
import * as repo from './triggers.repo.js';

/** Triggers (incoming webhooks, CONTRACT.md §10): make, show, change, remove, rotate the secret. */

export interface TriggerFields extends TargetInput {
  name?: string | undefined;
  inputs?: Record<string, unknown> | undefined;
}

/** Where a sender posts: the hub's public URL (SVC_PUBLIC_URL) and the trigger's id. */
export const hookUrl = (hub: Hub, id: string) => `${hub.config.publicUrl.replace(/\/+$/, '')}/v1/hooks/${id}`;

export function triggerOut(hub: Hub, t: TriggersTable) {
  return {
    id: t.id,
    realm_id: t.realm_id,
    name: t.name,
    ...json<Record<string, string>>(t.target),
    team_id: t.team_id,
    agent_id: t.agent_id,
    workspace_id: t.workspace_id,
    inputs: json<Record<string, unknown>>(t.inputs) ?? {},
    url: hookUrl(hub, t.id),
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

export async function newTrigger(
  hub: Hub,
  actor: Actor | null,
  input: TriggerFields & { realm_id: string; name: string },
) {
  const { realm, actor: user } = await requireRealm(hub, actor, input.realm_id, 'schedules.manage');
  const t = await checkTarget(hub, realm, input);
  const now = hub.now();
  const secret = newChannelSecret();
  const row: TriggersTable = {
    id: hub.newId(),
    org_id: realm.org_id,
    realm_id: realm.id,
    name: input.name,
    target: JSON.stringify(t.target),
    team_id: t.team_id,
    agent_id: t.agent_id,
    workspace_id: t.workspace_id,
    inputs: JSON.stringify(input.inputs ?? {}),
    // Sealed at rest like every secret of the hub (src/hub/secrets/cipher.ts); shown once, here.
    secret: hub.cipher.seal(secret),
    created_by_user_id: user.user.id,
    created_at: now,
    updated_at: now,
  };
  await repo.insertTrigger(hub.db, row);
  return { ...triggerOut(hub, row), secret };
}

export async function visibleTrigger(
  hub: Hub,
  actor: Actor | null,
  id: string,
  permission: RealmPermission,
): Promise<TriggersTable> {
  requireUser(actor);
  const t = await repo.loadTrigger(hub.db, id);
  if (!t) throw notFound('trigger');
  await requireRealm(hub, actor, t.realm_id, permission);
  return t;
}

/** A trigger with its newest 20 deliveries (what arrived, and what became of it). */
export async function showTrigger(hub: Hub, t: TriggersTable) {
  return { ...triggerOut(hub, t), recent_deliveries: await repo.recentDeliveries(hub.db, t.id, 20) };
}

export async function updateTrigger(hub: Hub, actor: Actor | null, input: TriggerFields & { id: string }) {
  const t = await visibleTrigger(hub, actor, input.id, 'schedules.manage');
  const next: TriggersTable = { ...t, updated_at: hub.now() };
  Object.assign(next, await retarget(hub, t, input));
  if (input.name !== undefined) next.name = input.name;
  if (input.inputs !== undefined) next.inputs = JSON.stringify(input.inputs);
  const { id: _, ...set } = next;
  await repo.updateTrigger(hub.db, t.id, set);
  return triggerOut(hub, next);
}

export async function rotateSecret(hub: Hub, actor: Actor | null, id: string) {
  const t = await visibleTrigger(hub, actor, id, 'schedules.manage');
  const secret = newChannelSecret();
  const next = { ...t, secret: hub.cipher.seal(secret), updated_at: hub.now() };
  await repo.updateTrigger(hub.db, t.id, { secret: next.secret, updated_at: next.updated_at });
  return { ...triggerOut(hub, next), secret };
}

export async function removeTrigger(hub: Hub, actor: Actor | null, id: string): Promise<boolean> {
  requireUser(actor);
  const t = await repo.loadTrigger(hub.db, id);
  if (!t) return false;
  await requireRealm(hub, actor, t.realm_id, 'schedules.manage');
  return repo.deleteTrigger(hub.db, id);
}

export async function listTriggers(
  hub: Hub,
  actor: Actor | null,
  input: { realm_id: string; limit: number; cursor?: string | undefined },
) {
  await requireRealm(hub, actor, input.realm_id, 'schedules.view');
  const page = await repo.listTriggers(hub.db, input.realm_id, {
    limit: input.limit,
    ...(input.cursor ? { cursor: input.cursor } : {}),
  });
  return { data: page.data.map((t) => triggerOut(hub, t)), next_cursor: page.next_cursor };
}
