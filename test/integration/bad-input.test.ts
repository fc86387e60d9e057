import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { hubOps } from '../../src/hub/ops.js';
import { type Reply, startTestHub, type TestHub } from '../helpers/hub.js';
import { createOrgWithOwner } from '../helpers/world.js';

/**
 * Bad input on every operation, derived from its own schema: a missing required field, a value of
 * the wrong type, an empty string where at least one character is required, a number out of range,
 * an unknown enum value, a non-object body. Each answers invalid_params naming the field, never 500.
 * Then unknown ids answer not_found.
 */

interface PropSchema {
  type?: string;
  minLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
}

/** Bad values for one property, by its JSON schema. */
function badValues(p: PropSchema): unknown[] {
  const out: unknown[] = [];
  if (p.enum) out.push('no-such-value', 7);
  else if (p.type === 'string') {
    out.push(12345, true, ['x'], { a: 1 });
    if ((p.minLength ?? 0) >= 1) out.push('');
  } else if (p.type === 'integer' || p.type === 'number') {
    out.push('5', true);
    if (p.minimum !== undefined) out.push(p.minimum - 1);
    if (p.maximum !== undefined) out.push(p.maximum + 1);
    if (p.type === 'integer') out.push(1.5);
  } else if (p.type === 'boolean') out.push('yes', 1);
  else if (p.type === 'array') out.push('x', { a: 1 });
  else out.push(12345);
  return out;
}

function assertInvalid(r: Reply, field: string, what: string): void {
  assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
  assert.deepEqual(Object.keys(r.body).sort(), ['code', 'details', 'error', 'ok'], what);
  assert.equal(r.body.ok, false, what);
  assert.equal(r.body.code, 'invalid_params', what);
  assert.equal(typeof r.body.error, 'string', what);
  const issues = r.body.details.issues as { field: string; message: string }[];
  assert.ok(
    issues.some((i) => (i.field === field || i.field.startsWith(`${field}.`)) && i.message.length > 0),
    `${what}: ${JSON.stringify(issues)}`,
  );
}

describe('bad input', () => {
  let h: TestHub;
  let org: Awaited<ReturnType<typeof createOrgWithOwner>>;
  before(async () => {
    h = await startTestHub();
    org = await createOrgWithOwner(h, 'badinput');
  });
  after(() => h.close());

  for (const o of hubOps) {
    it(`${o.name} answers invalid_params with field issues`, async () => {
      const schema = z.toJSONSchema(o.input, { io: 'input', unrepresentable: 'any' }) as {
        properties?: Record<string, PropSchema>;
        required?: string[];
      };
      for (const body of ['[1,2]', '"text"', '42', 'true']) {
        assertInvalid(await h.call(o.name, body), '(body)', `${o.name} ${body}`);
      }
      if (schema.required?.length) {
        const r = await h.call(o.name, {});
        for (const field of schema.required) assertInvalid(r, field, `${o.name} {} (${field})`);
      }
      for (const [field, p] of Object.entries(schema.properties ?? {})) {
        for (const v of badValues(p)) {
          const what = `${o.name} {${field}: ${JSON.stringify(v)}}`;
          assertInvalid(await h.call(o.name, { [field]: v }), field, what);
        }
      }
    });
  }

  it('unknown ids answer not_found', async () => {
    const nope = '018f0000-0000-7000-8000-000000000000';
    const realm = org.defaultRealmId;
    const cases: [string, unknown][] = [
      ['tokens/revoke', { id: nope }],
      ['orgs/new', { slug: 'ghost-owner', owner: { user_id: nope } }],
      ['orgs/get', { id: nope }],
      ['orgs/update', { id: nope, display_name: 'x' }],
      ['orgs/delete', { id: nope }],
      ['orgs/invite_member', { org_id: nope, email: 'a@b.test', role: 'member' }],
      ['orgs/list_members', { org_id: nope }],
      ['orgs/set_member_role', { org_id: org.orgId, user_id: nope, role: 'admin' }],
      ['orgs/set_member_role', { org_id: nope, user_id: org.owner.id, role: 'admin' }],
      ['orgs/remove_member', { org_id: org.orgId, user_id: nope }],
      ['invites/accept', { code: 'svc_inv_unknown', password: 'long enough pw' }],
      ['groups/new', { org_id: nope, name: 'g' }],
      ['groups/list', { org_id: nope }],
      ['groups/add_member', { group_id: nope, user_id: org.owner.id }],
      ['groups/remove_member', { group_id: nope, user_id: org.owner.id }],
      ['groups/remove', { id: nope }],
      ['realms/new', { org_id: nope, name: 'r' }],
      ['realms/get', { id: nope }],
      ['realms/list', { org_id: nope }],
      ['realms/remove', { id: nope }],
      ['realms/add_member', { realm_id: nope, member_type: 'user', member_id: org.owner.id, role: 'member' }],
      ['realms/add_member', { realm_id: realm, member_type: 'user', member_id: nope, role: 'member' }],
      ['realms/add_member', { realm_id: realm, member_type: 'group', member_id: nope, role: 'member' }],
      ['realms/add_member', { realm_id: realm, member_type: 'daemon', member_id: nope, role: 'member' }],
      ['realms/set_member_role', { realm_id: realm, member_type: 'user', member_id: nope, role: 'admin' }],
      ['realms/remove_member', { realm_id: realm, member_type: 'group', member_id: nope }],
      ['realms/remove_member', { realm_id: nope, member_type: 'user', member_id: org.owner.id }],
      ['realms/list_members', { realm_id: nope }],
      ['realms/create_daemon_token', { realm_id: nope, name: 'd' }],
      ['daemons/list', { realm_id: nope }],
      ['daemons/get', { id: nope }],
      ['daemons/remove', { id: nope }],
      ['reviews/list', { realm_id: nope }],
      ['reviews/get', { id: nope }],
      ['reviews/submit', { review_id: nope, action: 'approve' }],
    ];
    for (const [opName, body] of cases) {
      const r = await h.call(opName, body);
      assert.equal(r.status, 404, `${opName} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.deepEqual(Object.keys(r.body.error).sort(), ['code', 'message']);
      assert.equal(r.body.error.code, 'not_found', opName);
    }
  });
});
