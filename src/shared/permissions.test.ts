import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  effectiveRealmRole,
  ORG_PERMISSIONS,
  type OrgRole,
  orgAllows,
  REALM_PERMISSIONS,
  type RealmRole,
  realmAllows,
} from './permissions.js';

describe('permissions (CONTRACT.md §3)', () => {
  it('realm permissions by role', () => {
    const table: [keyof typeof REALM_PERMISSIONS, RealmRole[]][] = [
      ['runs.view', ['member', 'operator', 'admin']],
      ['runs.create', ['member', 'operator', 'admin']],
      ['reviews.submit', ['member', 'operator', 'admin']],
      ['runs.manage', ['operator', 'admin']],
      ['reviews.manage', ['operator', 'admin']],
      ['rules.manage.realm', ['operator', 'admin']],
      ['channels.manage.realm', ['operator', 'admin']],
      ['teams.install', ['operator', 'admin']],
      ['schedules.view', ['member', 'operator', 'admin']],
      ['schedules.manage', ['operator', 'admin']],
      ['realms.members.manage', ['admin']],
      ['workspaces.manage', ['admin']],
      ['daemons.manage', ['admin']],
      ['runs.terminate', ['admin']],
      ['secrets.manage.realm', ['admin']],
    ];
    assert.equal(table.length, Object.keys(REALM_PERMISSIONS).length);
    for (const [perm, allowed] of table) {
      for (const role of ['member', 'operator', 'admin'] as const) {
        assert.equal(realmAllows(role, perm), allowed.includes(role), `${role} ${perm}`);
      }
      assert.equal(realmAllows(null, perm), false);
    }
  });

  it('organization permissions by role', () => {
    const table: [keyof typeof ORG_PERMISSIONS, OrgRole[]][] = [
      ['agents.view', ['member', 'admin', 'owner']],
      ['teams.view', ['member', 'admin', 'owner']],
      ['orgs.view', ['member', 'admin', 'owner']],
      ['agents.manage', ['admin', 'owner']],
      ['teams.manage', ['admin', 'owner']],
      ['rules.manage', ['admin', 'owner']],
      ['channels.manage', ['admin', 'owner']],
      ['realms.manage', ['admin', 'owner']],
      ['members.manage', ['admin', 'owner']],
      ['orgs.manage', ['admin', 'owner']],
      ['orgs.delete', ['owner']],
      ['secrets.manage', ['admin', 'owner']],
    ];
    assert.equal(table.length, Object.keys(ORG_PERMISSIONS).length);
    for (const [perm, allowed] of table) {
      for (const role of ['member', 'admin', 'owner'] as const) {
        assert.equal(orgAllows(role, perm), allowed.includes(role), `${role} ${perm}`);
      }
      assert.equal(orgAllows(null, perm), false);
    }
  });

  it('effective realm role: org owner/admin act as realm admin, otherwise the highest held role', () => {
    assert.equal(effectiveRealmRole('owner', []), 'admin');
    assert.equal(effectiveRealmRole('admin', ['member']), 'admin');
    assert.equal(effectiveRealmRole('member', []), null);
    assert.equal(effectiveRealmRole(null, []), null);
    assert.equal(effectiveRealmRole('member', ['member', 'operator']), 'operator');
    assert.equal(effectiveRealmRole('member', ['admin', 'member']), 'admin');
  });
});
