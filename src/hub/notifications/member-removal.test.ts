import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { connectDaemon } from '../../../test/helpers/tunnel-client.js';
import { addOrgUser, createOrgWithOwner, uniq } from '../../../test/helpers/world.js';
import { recordEvent } from '../events/events.js';
import { type Receiver, startReceiver } from './receiver.test-helper.js';

/**
 * A member's personal channel hears the organization only while they belong to it: removal takes
 * the channel out of the org's and its realms' rules and cancels what is still pending for it,
 * checked with real HTTP receivers on 127.0.0.1.
 */
describe('notifications: a removed member’s personal channels', () => {
  let h: TestHub;
  const receivers: Receiver[] = [];
  before(async () => {
    // Retries wait a minute: a delivery that failed once stays pending until the test looks at it.
    h = await startTestHub({
      config: { notifyPollMs: 10, notifyRetryBaseMs: 60_000, notifyRetryCapMs: 60_000 },
    });
    await h.ok('settings/set', { key: 'notifications.allow_private_destinations', value: 'true' });
  });
  after(async () => {
    await h.close();
    for (const r of receivers) await r.close();
  });

  it('receive nothing from the organization after orgs/remove_member', async () => {
    const org = await createOrgWithOwner(h, `leaver-${uniq()}`);
    const member = await addOrgUser(h, org.orgId, `leaver-${uniq()}@org.test`, 'admin');
    const mine = await startReceiver([503]);
    const theirs = await startReceiver();
    receivers.push(mine, theirs);
    const personal = await h.ok(
      'notification_channels/new',
      { name: 'my phone', destinations: [{ type: 'webhook', webhook_url: `${mine.url}/me` }] },
      member.token,
    );
    const orgChannel = await h.ok('notification_channels/new', {
      org_id: org.orgId,
      name: 'ops',
      destinations: [{ type: 'webhook', webhook_url: `${theirs.url}/ops` }],
    });
    const channelIds = [personal.data.id, orgChannel.data.id];
    await h.ok(
      'realms/new_notification_rule',
      { org_id: org.orgId, event: 'invite.sent', channel_ids: channelIds },
      member.token,
    );
    await h.ok(
      'realms/new_notification_rule',
      { realm_id: org.defaultRealmId, event: 'daemon.connected', channel_ids: channelIds },
      member.token,
    );

    // While a member: the personal channel hears the org (its first attempt fails and waits).
    await h.ok('orgs/invite_member', { org_id: org.orgId, email: `a-${uniq()}@org.test`, role: 'member' });
    assert.equal(JSON.parse((await mine.next()).body).type, 'invite.sent');
    assert.equal(JSON.parse((await theirs.next()).body).type, 'invite.sent');

    await h.ok('orgs/remove_member', { org_id: org.orgId, user_id: member.id }, org.owner.token);

    const rows = () =>
      h.running.hub.db
        .selectFrom('notification_deliveries')
        .select(['event_type', 'state', 'last_error'])
        .where('channel_id', '=', personal.data.id)
        .execute();
    assert.deepEqual(await rows(), [
      {
        event_type: 'invite.sent',
        state: 'cancelled',
        last_error: 'the channel’s owner left the organization',
      },
    ]);
    for (const scope of [{ org_id: org.orgId }, { realm_id: org.defaultRealmId }]) {
      const rules = await h.ok('realms/list_notification_rules', scope, org.owner.token);
      const custom = rules.data.filter((r: { locked: boolean }) => !r.locked);
      assert.deepEqual(
        custom.map((r: { channel_ids: string[] }) => r.channel_ids),
        [[orgChannel.data.id]],
      );
    }

    // Later events of the org and its realm, and a run naming the channel in notify_channels.
    await h.ok('orgs/invite_member', { org_id: org.orgId, email: `b-${uniq()}@org.test`, role: 'member' });
    const dt = await h.ok('realms/create_daemon_token', { realm_id: org.defaultRealmId, name: 'box' });
    const daemon = await connectDaemon(h.url, dt.data.token);
    await recordEvent(h.running.hub.db, h.running.hub, {
      type: 'run.ended',
      org_id: org.orgId,
      realm_id: org.defaultRealmId,
      payload: { state: 'succeeded', channel_ids: [personal.data.id, orgChannel.data.id] },
    });
    const later = [await theirs.next(), await theirs.next(), await theirs.next()];
    assert.deepEqual(later.map((r) => JSON.parse(r.body).type).sort(), [
      'daemon.connected',
      'invite.sent',
      'run.ended',
    ]);
    await daemon.close();
    assert.equal(mine.received.length, 1);
    assert.equal((await rows()).length, 1);
  });
});
