import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  eventually,
  type Receiver,
  startReceiver,
} from '../../src/hub/notifications/receiver.test-helper.js';
import { killChildren, runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { createOrgWithOwner } from '../helpers/world.js';

/** `svc channels …` and `svc rules …` as a child process against a real hub and receiver. */
describe('svc channels and svc rules', () => {
  let h: TestHub;
  let r: Receiver;
  let org: Awaited<ReturnType<typeof createOrgWithOwner>>;
  const svc = (...args: string[]) =>
    runCli(args, { env: { SVC_HUB_URL: h.url, SVC_TOKEN: org.owner.token } });
  before(async () => {
    h = await startTestHub({ config: { notifyPollMs: 20, notifyRetryBaseMs: 5, notifyRetryCapMs: 20 } });
    r = await startReceiver();
    org = await createOrgWithOwner(h, 'clinotif');
    await h.ok('settings/set', { key: 'notifications.allow_private_destinations', value: 'true' });
  });
  after(async () => {
    await h.close();
    await r.close();
    assert.equal(await killChildren(), 0);
  });

  test('new, list, test, deliveries, rules new/list/remove, update, remove', async () => {
    const created = await svc(
      'channels',
      'new',
      'ops',
      '--realm',
      'default',
      '--webhook',
      `${r.url}/cli`,
      '--json',
    );
    assert.equal(created.code, 0, created.stderr);
    const ch = JSON.parse(created.stdout).data;
    assert.match(ch.secret, /^whsec_/);

    const human = await svc('channels', 'list', '--realm', 'default');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /ops/);

    const tested = await svc('channels', 'test', ch.id);
    assert.equal(tested.code, 0, tested.stderr);
    assert.match(tested.stdout, /webhook .*: succeeded \(HTTP 200/);
    assert.equal((await r.next()).path, '/cli');

    const log = await svc('channels', 'deliveries', ch.id);
    assert.match(log.stdout, /notification\.test\s+webhook\s+succeeded\s+1\s+200/);

    const rule = await svc(
      'rules',
      'new',
      'run.ended',
      '--realm',
      'default',
      '--channel',
      ch.id,
      '--state',
      'failed',
      '--json',
    );
    assert.equal(rule.code, 0, rule.stderr);
    const ruleId = JSON.parse(rule.stdout).data.id;
    assert.match((await svc('rules', 'list', '--realm', 'default')).stdout, /run\.ended .*state=failed/);
    assert.match((await svc('rules', 'list', '--org', 'clinotif')).stdout, /invite\.sent/);
    assert.equal((await svc('rules', 'remove', ruleId)).code, 0);

    const sysRule = (await h.ok('realms/list_notification_rules', { org_id: org.orgId })).data[0].id;
    const locked = await svc('rules', 'remove', sysRule);
    assert.equal(locked.code, 1);
    assert.match(locked.stderr, /^error: locked: /);

    const upd = await svc('channels', 'update', ch.id, '--disable', '--name', 'ops2');
    assert.match(upd.stdout, /enabled:\s+no/);
    assert.equal((await svc('channels', 'remove', ch.id)).code, 0);
    await eventually(async () => r.received.length === 1, 'no further requests');
  });
});
