// biome-ignore-all lint/suspicious/noExplicitAny: test replies are inspected freely
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, uniq, type World } from '../../../test/helpers/world.js';
import { enqueueForChannel } from './outbox.js';
import { claimDue } from './worker.js';

const DEST = [{ type: 'webhook', webhook_url: 'https://hooks.example.com/svc' }];
const CHANNEL_KEYS = [
  'created_at',
  'destinations',
  'enabled',
  'id',
  'lock_reason',
  'locked',
  'name',
  'org_id',
  'realm_id',
  'rule_count',
  'system_key',
  'updated_at',
  'user_id',
];

/** Channels and rules: shapes, errors and permissions of the spec's sections (CONTRACT.md §7). */
describe('notification channels and rules', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    // A worker that never polls on its own: these tests only look at the outbox.
    h = await startTestHub({ config: { notifyPollMs: 3_600_000 } });
    w = await buildWorld(h);
  });
  after(() => h.close());

  const errorOf = (r: { status: number; body: any }) =>
    typeof r.body.error === 'string' ? `${r.status} ${r.body.code}` : `${r.status} ${r.body.error?.code}`;

  it('new answers the channel and its secret once; list, update and remove answer the spec shapes', async () => {
    const created = await h.call(
      'notification_channels/new',
      { realm_id: w.realmId, name: 'ops', destinations: DEST },
      w.tokens.realm_operator,
    );
    assert.equal(created.status, 201);
    const ch = created.body.data;
    assert.deepEqual(Object.keys(ch).sort(), [...CHANNEL_KEYS, 'secret'].sort());
    assert.equal(ch.realm_id, w.realmId);
    assert.equal(ch.org_id, null);
    assert.equal(ch.user_id, null);
    assert.equal(ch.enabled, true);
    assert.equal(ch.locked, false);
    assert.equal(ch.rule_count, 0);
    assert.deepEqual(ch.destinations, DEST);
    assert.match(ch.secret, /^whsec_[A-Za-z0-9_-]{43}$/);

    const listed = await h.ok('notification_channels/list', { realm_id: w.realmId }, w.tokens.realm_operator);
    const row = listed.data.find((c: any) => c.id === ch.id);
    assert.deepEqual(Object.keys(row).sort(), CHANNEL_KEYS);
    assert.ok(!JSON.stringify(listed).includes(ch.secret));
    assert.equal(listed.next_cursor, null);

    const upd = await h.call(
      'notification_channels/update',
      {
        id: ch.id,
        name: 'ops-renamed',
        enabled: false,
        destinations: [{ type: 'slack', webhook_url: 'https://hooks.slack.com/services/T/B/x' }],
      },
      w.tokens.realm_operator,
    );
    assert.equal(upd.status, 200);
    assert.deepEqual(Object.keys(upd.body.data).sort(), CHANNEL_KEYS);
    assert.equal(upd.body.data.name, 'ops-renamed');
    assert.equal(upd.body.data.enabled, false);
    assert.equal(upd.body.data.destinations[0].type, 'slack');
    assert.ok(upd.body.data.updated_at >= ch.updated_at);
    // Only `enabled`: the rest stays.
    const on = await h.ok(
      'notification_channels/update',
      { id: ch.id, enabled: true },
      w.tokens.realm_operator,
    );
    assert.equal(on.data.name, 'ops-renamed');
    assert.equal(on.data.enabled, true);

    await h.ok(
      'realms/new_notification_rule',
      { realm_id: w.realmId, event: 'run.ended', channel_ids: [ch.id] },
      w.tokens.realm_operator,
    );
    const counted = await h.ok('notification_channels/update', { id: ch.id }, w.tokens.realm_operator);
    assert.equal(counted.data.rule_count, 1);

    const rm = await h.call('notification_channels/remove', { id: ch.id }, w.tokens.realm_operator);
    assert.deepEqual(rm.body, { ok: true, data: { id: ch.id, removed: true } });
    assert.equal(
      errorOf(await h.call('notification_channels/update', { id: ch.id, enabled: true })),
      '404 not_found',
    );
  });

  it('channels: invalid_params, unauthorized, forbidden, not_found and locked', async () => {
    const bad = [
      { realm_id: w.realmId, name: 'x', destinations: [{ type: 'webhook', webhook_url: 'ftp://x.test/' }] },
      { realm_id: w.realmId, name: 'x', destinations: [{ type: 'email', webhook_url: 'https://x.test/' }] },
      { realm_id: w.realmId, name: 'x', destinations: [{ type: 'webhook', webhook_url: 'not a url' }] },
      { realm_id: w.realmId, name: 'x', destinations: [] },
      { realm_id: w.realmId, org_id: w.orgId, name: 'x', destinations: DEST },
      { realm_id: w.realmId, destinations: DEST },
    ];
    for (const body of bad) {
      const r = await h.call('notification_channels/new', body);
      assert.equal(errorOf(r), '400 invalid_params', JSON.stringify(body));
      assert.equal(typeof r.body.error, 'string');
      assert.ok(Array.isArray(r.body.details.issues));
    }
    const issue = (await h.call('notification_channels/new', bad[0])).body.details.issues[0];
    assert.deepEqual(issue, { field: 'destinations.0.webhook_url', message: 'must be an http or https URL' });
    assert.equal(
      errorOf(await h.call('notification_channels/update', { enabled: true })),
      '400 invalid_params',
    );
    assert.equal(
      errorOf(await h.call('notification_channels/update', { id: 'nope', enabled: 'yes' })),
      '400 invalid_params',
    );

    assert.equal(
      errorOf(await h.call('notification_channels/new', { name: 'x', destinations: DEST }, null)),
      '401 unauthorized',
    );
    assert.equal(
      errorOf(
        await h.call('notification_channels/new', { name: 'x', destinations: DEST }, w.tokens.realm_token),
      ),
      '403 forbidden',
    );
    assert.equal(
      errorOf(
        await h.call(
          'notification_channels/new',
          { realm_id: w.realmId, name: 'x', destinations: DEST },
          w.tokens.realm_member,
        ),
      ),
      '403 forbidden',
    );
    assert.equal(
      errorOf(
        await h.call(
          'notification_channels/new',
          { org_id: w.orgId, name: 'x', destinations: DEST },
          w.tokens.realm_admin,
        ),
      ),
      '403 forbidden',
    );
    assert.equal(
      errorOf(
        await h.call('notification_channels/new', {
          realm_id: 'no-such-realm',
          name: 'x',
          destinations: DEST,
        }),
      ),
      '404 not_found',
    );
    assert.equal(
      errorOf(await h.call('notification_channels/update', { id: 'no-such-channel', enabled: false })),
      '404 not_found',
    );
    assert.equal(
      errorOf(await h.call('notification_channels/remove', { id: 'no-such-channel' })),
      '404 not_found',
    );

    // Personal channels belong to their user.
    const mine = (
      await h.ok('notification_channels/new', { name: 'me', destinations: DEST }, w.tokens.org_member)
    ).data;
    assert.equal(mine.user_id, w.users.org_member!.id);
    assert.equal(mine.realm_id, null);
    assert.equal(mine.org_id, null);
    assert.equal(
      errorOf(
        await h.call('notification_channels/update', { id: mine.id, enabled: false }, w.tokens.org_admin),
      ),
      '403 forbidden',
    );
    const personal = (await h.ok('notification_channels/list', {}, w.tokens.org_member)).data;
    assert.deepEqual(
      personal.map((c: any) => c.id),
      [mine.id],
    );

    // The system channel is locked.
    const sys = (await h.ok('notification_channels/list', { org_id: w.orgId })).data.find(
      (c: any) => c.system_key,
    );
    const locked = await h.call('notification_channels/remove', { id: sys.id }, w.tokens.org_admin);
    assert.equal(locked.status, 423);
    assert.equal(locked.body.ok, false);
    assert.equal(locked.body.code, 'locked');
    assert.equal(typeof locked.body.error, 'string');
    // The test of a channel without destinations is refused.
    assert.equal(errorOf(await h.call('notification_channels/test', { id: sys.id })), '409 conflict');
  });

  it('rules: new, list and remove as the spec shows; system rule locked; errors', async () => {
    const ch = (
      await h.ok('notification_channels/new', {
        realm_id: w.realmId,
        name: `r-${uniq()}`,
        destinations: DEST,
      })
    ).data;
    const orgCh = (
      await h.ok('notification_channels/new', { org_id: w.orgId, name: `o-${uniq()}`, destinations: DEST })
    ).data;
    const created = await h.call(
      'realms/new_notification_rule',
      {
        realm_id: w.realmId,
        event: 'run.ended',
        channel_ids: [ch.id, orgCh.id],
        filter: { state: 'failed', team_id: 'team-x' },
      },
      w.tokens.realm_operator,
    );
    assert.equal(created.status, 201);
    const rule = created.body.data;
    assert.equal(rule.realm_id, w.realmId);
    assert.equal(rule.event, 'run.ended');
    assert.deepEqual(rule.channel_ids, [ch.id, orgCh.id].sort());
    assert.deepEqual(rule.filter, { team_id: 'team-x', state: 'failed' });
    assert.equal(rule.locked, false);
    const listed = await h.ok(
      'realms/list_notification_rules',
      { realm_id: w.realmId },
      w.tokens.realm_operator,
    );
    assert.deepEqual(
      listed.data.find((r: any) => r.id === rule.id),
      rule,
    );

    const removed = await h.call(
      'realms/remove_notification_rules',
      { id: rule.id },
      w.tokens.realm_operator,
    );
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { ok: true, data: true });
    assert.equal(errorOf(await h.call('realms/remove_notification_rules', { id: rule.id })), '404 not_found');
    assert.equal(errorOf(await h.call('realms/remove_notification_rules', {})), '400 invalid_params');
    assert.equal(
      errorOf(await h.call('realms/remove_notification_rules', { id: rule.id }, null)),
      '401 unauthorized',
    );

    const orgRule = (
      await h.ok('realms/new_notification_rule', {
        org_id: w.orgId,
        event: 'daemon.connected',
        channel_ids: [orgCh.id],
      })
    ).data;
    assert.equal(orgRule.org_id, w.orgId);
    assert.equal(orgRule.realm_id, null);
    // An org rule needs rules.manage: a realm admin who is an org member is forbidden.
    assert.equal(
      errorOf(await h.call('realms/remove_notification_rules', { id: orgRule.id }, w.tokens.realm_admin)),
      '403 forbidden',
    );
    assert.deepEqual(
      (await h.call('realms/remove_notification_rules', { id: orgRule.id }, w.tokens.org_admin)).body,
      { ok: true, data: true },
    );

    const sys = (await h.ok('realms/list_notification_rules', { org_id: w.orgId })).data.find(
      (r: any) => r.system_key === 'invite.sent',
    );
    assert.equal(sys.locked, true);
    assert.equal(sys.event, 'invite.sent');
    assert.equal(
      errorOf(await h.call('realms/remove_notification_rules', { id: sys.id }, w.tokens.realm_operator)),
      '403 forbidden',
    );
    const locked = await h.call('realms/remove_notification_rules', { id: sys.id }, w.tokens.org_owner);
    assert.equal(locked.status, 423);
    assert.equal(locked.body.code, 'locked');
    assert.equal(typeof locked.body.error, 'string');

    // invalid_params: unknown event, unknown or foreign channel, both or no scope, bad filter state.
    const other = (
      await h.ok('notification_channels/new', {
        realm_id: w.otherRealmId,
        name: `x-${uniq()}`,
        destinations: DEST,
      })
    ).data;
    const invalid = [
      { realm_id: w.realmId, event: 'run.exploded', channel_ids: [ch.id] },
      { realm_id: w.realmId, event: 'run.ended', channel_ids: ['no-such-channel'] },
      { realm_id: w.realmId, event: 'run.ended', channel_ids: [other.id] },
      { org_id: w.orgId, event: 'run.ended', channel_ids: [ch.id] },
      { realm_id: w.realmId, org_id: w.orgId, event: 'run.ended', channel_ids: [ch.id] },
      { event: 'run.ended', channel_ids: [ch.id] },
      { realm_id: w.realmId, event: 'run.ended', channel_ids: [] },
      { realm_id: w.realmId, event: 'run.ended', channel_ids: [ch.id], filter: { state: 'sleeping' } },
    ];
    for (const body of invalid) {
      assert.equal(
        errorOf(await h.call('realms/new_notification_rule', body)),
        '400 invalid_params',
        JSON.stringify(body),
      );
    }
    assert.equal(
      errorOf(
        await h.call(
          'realms/new_notification_rule',
          { realm_id: w.realmId, event: 'run.ended', channel_ids: [ch.id] },
          w.tokens.realm_member,
        ),
      ),
      '403 forbidden',
    );
    assert.equal(
      errorOf(
        await h.call('realms/new_notification_rule', {
          realm_id: 'no-such-realm',
          event: 'run.ended',
          channel_ids: [ch.id],
        }),
      ),
      '404 not_found',
    );
  });

  it('two claimers never take the same delivery', async () => {
    const ch = (
      await h.ok('notification_channels/new', { org_id: w.orgId, name: `m-${uniq()}`, destinations: DEST })
    ).data;
    const hub = h.running.hub;
    // Written straight into the outbox (the test operation would wake this hub's worker).
    const row = await hub.db
      .selectFrom('notification_channels')
      .selectAll()
      .where('id', '=', ch.id)
      .executeTakeFirstOrThrow();
    for (let i = 0; i < 10; i++) {
      const env = {
        id: hub.newId(),
        type: 'notification.test',
        occurred_at: 0,
        org_id: w.orgId,
        realm_id: null,
        subject_id: null,
        data: {},
      };
      await enqueueForChannel(hub.db, hub, row, env, 'test');
    }
    const [a, b, c] = await Promise.all([claimDue(hub, 4), claimDue(hub, 4), claimDue(hub, 4)]);
    const ids = [...a, ...b, ...c].map((d) => d.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(ids.length, 10);
    // Claimed rows are leased: claiming again finds nothing until the lease runs out.
    assert.equal((await claimDue(hub, 20)).filter((d) => ids.includes(d.id)).length, 0);
  });
});
