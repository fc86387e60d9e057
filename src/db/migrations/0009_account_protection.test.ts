import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { testDatabase } from '../../../test/helpers/db.js';
import { migrate, openDatabase } from '../index.js';
import { migrations } from './index.js';

const before0009 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0009'));

describe('migration 0009 on an existing database', () => {
  it('gives a password-less account the claim of its first invitation and marks the SVC_ADMIN_TOKEN row', async () => {
    const target = testDatabase();
    const database = await openDatabase({
      url: target.url,
      ...(target.schema ? { schema: target.schema } : {}),
    });
    try {
      await migrate(database.db, before0009);
      // biome-ignore lint/suspicious/noExplicitAny: rows of the schema before this migration
      const db = database.db as unknown as Kysely<any>;
      const user = (id: string, handle: string, password_hash: string | null, is_site_admin = 0) => ({
        id,
        handle,
        email: `${handle}@old.test`,
        display_name: handle,
        status: password_hash ? 'active' : 'invited',
        is_site_admin,
        password_hash,
        created_at: 1,
      });
      await db
        .insertInto('users')
        .values([
          user('u-admin', 'admin', null, 1),
          user('u-owner', 'owner', 'scrypt$x'),
          user('u-pending', 'pending', null),
          user('u-active', 'active', 'scrypt$y'),
        ])
        .execute();
      const org = (id: string) => ({
        id,
        slug: id,
        display_name: id,
        status: 'active',
        owner_user_id: 'u-owner',
        created_at: 1,
        updated_at: 1,
      });
      await db
        .insertInto('orgs')
        .values([org('org-first'), org('org-second')])
        .execute();
      const invite = (id: string, org_id: string, user_id: string, created_at: number) => ({
        id,
        org_id,
        user_id,
        email: 'x@old.test',
        role: 'member',
        code_hash: `hash-${id}`,
        status: 'pending',
        created_at,
        expires_at: created_at + 1000,
      });
      await db
        .insertInto('invites')
        .values([
          invite('i2', 'org-second', 'u-pending', 20),
          invite('i1', 'org-first', 'u-pending', 10),
          invite('i3', 'org-second', 'u-active', 5),
        ])
        .execute();
      const token = (id: string, user_id: string, name: string) => ({
        id,
        user_id,
        kind: 'personal',
        name,
        token_hash: `hash-${id}`,
        hint: '…',
        created_at: 1,
      });
      await db
        .insertInto('tokens')
        .values([
          token('t-admin', 'u-admin', 'SVC_ADMIN_TOKEN'),
          token('t-bootstrap', 'u-admin', 'bootstrap'),
          token('t-other', 'u-active', 'SVC_ADMIN_TOKEN'),
        ])
        .execute();

      await migrate(database.db);
      const claims = await database.db
        .selectFrom('users')
        .select(['id', 'claim_org_id'])
        .orderBy('id')
        .execute();
      assert.deepEqual(claims, [
        { id: 'u-active', claim_org_id: null },
        { id: 'u-admin', claim_org_id: null },
        { id: 'u-owner', claim_org_id: null },
        { id: 'u-pending', claim_org_id: 'org-first' },
      ]);
      const kinds = await database.db.selectFrom('tokens').select(['id', 'kind']).orderBy('id').execute();
      assert.deepEqual(kinds, [
        { id: 't-admin', kind: 'admin' },
        { id: 't-bootstrap', kind: 'personal' },
        { id: 't-other', kind: 'personal' },
      ]);
    } finally {
      await database.close();
      await target.cleanup();
    }
  });
});
