import { z } from 'zod';
import { SECRET_NAME, SECRET_NAME_RULE } from '../../shared/secret-key.js';
import { requireOrg, requireRealm } from '../access/access.service.js';
import type { Actor } from '../access/actor.js';
import type { Hub } from '../context.js';
import { cursor, exactlyOneScope, id, limit, op } from '../http/op.js';
import { decodeCursor, pageOf } from '../http/paging.js';
import { deleteSecret, listSecretNames, putSecret } from './secrets.repo.js';

/**
 * Secrets of a realm or an organization (CONTRACT.md §12): set, list (names only), remove. No
 * operation ever answers a value; agents get them as environment variables (resolve.ts).
 */

export const MAX_SECRET_BYTES = 64 * 1024;

const secretName = z.string().regex(SECRET_NAME, SECRET_NAME_RULE);
const scope = { realm_id: id.optional(), org_id: id.optional() };

/** The scope after the permission check: realm admin for a realm, org owner/admin for an org. */
async function requireScope(
  hub: Hub,
  actor: Actor | null,
  input: { realm_id?: string | undefined; org_id?: string | undefined },
): Promise<{ scopeId: string; orgId: string; realmId: string | null; userId: string }> {
  if (input.realm_id !== undefined) {
    const { realm, actor: user } = await requireRealm(hub, actor, input.realm_id, 'secrets.manage.realm');
    return { scopeId: realm.id, orgId: realm.org_id, realmId: realm.id, userId: user.user.id };
  }
  const { org, actor: user } = await requireOrg(hub, actor, input.org_id!, 'secrets.manage');
  return { scopeId: org.id, orgId: org.id, realmId: null, userId: user.user.id };
}

export const secretOps = [
  op({
    name: 'secrets/set',
    summary:
      'Sets a secret of a realm (realm admin) or an organization (org owner/admin); the value is stored encrypted and never answered.',
    input: z
      .object({
        ...scope,
        name: secretName,
        value: z
          .string()
          .min(1, 'must not be empty')
          .refine((v) => Buffer.byteLength(v) <= MAX_SECRET_BYTES, 'must be at most 64 KB'),
      })
      .superRefine(exactlyOneScope),
    async handler(ctx, input) {
      const s = await requireScope(ctx, ctx.actor, input);
      const now = ctx.now();
      const row = {
        id: ctx.newId(),
        org_id: s.orgId,
        realm_id: s.realmId,
        scope_id: s.scopeId,
        name: input.name,
        value: ctx.cipher.seal(input.value),
        created_at: now,
        updated_at: now,
        updated_by: s.userId,
      };
      await putSecret(ctx.db, row);
      return {
        data: { name: row.name, realm_id: s.realmId, org_id: s.orgId, updated_at: now, updated_by: s.userId },
      };
    },
  }),
  op({
    name: 'secrets/list',
    summary: "A realm's or an organization's secrets: names with updated_at and updated_by, never values.",
    input: z.object({ ...scope, limit, cursor }).superRefine(exactlyOneScope),
    async handler(ctx, input) {
      const s = await requireScope(ctx, ctx.actor, input);
      const after = decodeCursor(input.cursor, SECRET_NAME);
      const rows = await listSecretNames(ctx.db, s.scopeId, after, input.limit + 1);
      return pageOf(rows, input.limit, (r) => r.name);
    },
  }),
  op({
    name: 'secrets/remove',
    summary: 'Removes a secret of a realm or an organization; removed: false when it was not set.',
    input: z.object({ ...scope, name: secretName }).superRefine(exactlyOneScope),
    async handler(ctx, input) {
      const s = await requireScope(ctx, ctx.actor, input);
      return { removed: await deleteSecret(ctx.db, s.scopeId, input.name) };
    },
  }),
];
