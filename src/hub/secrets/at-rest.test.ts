import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { createCipher, keyId } from './cipher.js';
import { SEALED_COLUMNS } from './reseal.js';

/**
 * The hub's secrets at rest (the dispatch signing key, channel secrets, realm and organization
 * secrets) are sealed under the current key; plain values from before are sealed at start, and a
 * start with a new key (the old one still given for reading) seals everything again.
 */
describe('secrets at rest', () => {
  const key1 = randomBytes(32).toString('base64');
  const key2 = randomBytes(32).toString('base64');
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub({ secretsKey: key1 });
    w = await buildWorld(h);
  });
  after(() => h.close());

  const allValues = async () => {
    const db = h.running.hub.db;
    const out: string[] = [];
    for (const c of SEALED_COLUMNS) {
      const rows = (await db.selectFrom(c.table).selectAll().execute()) as unknown as Record<
        string,
        string
      >[];
      out.push(...rows.map((r) => r[c.column]!));
    }
    return out;
  };

  it('seals plain values left from before at start, and re-seals under a new key (old key for reading)', async () => {
    const channel = await h.ok('notification_channels/new', {
      realm_id: w.realmId,
      name: 'c',
      destinations: [{ type: 'webhook', webhook_url: 'https://example.test/h' }],
    });
    const secret = channel.data.secret as string;
    await h.ok('secrets/set', { realm_id: w.realmId, name: 'API_KEY', value: 'sk-live-123456' });
    const db = () => h.running.hub.db;
    const stored = await db()
      .selectFrom('notification_channels')
      .select('secret')
      .where('id', '=', channel.data.id)
      .executeTakeFirstOrThrow();
    assert.equal(createCipher([Buffer.from(key1, 'base64')]).open(stored.secret), secret);
    // A value written before encryption at rest: plain.
    await db()
      .updateTable('notification_channels')
      .set({ secret })
      .where('id', '=', channel.data.id)
      .execute();
    const kid = h.running.hub.tunnel.keys.kid;

    await h.running.close();
    h.running = await h.startAnother({ secretsKey: key2, secretsOldKeys: [key1] });
    h.url = h.running.url;
    const values = await allValues();
    assert.ok(values.length >= 3);
    for (const v of values) assert.ok(v.startsWith(`svc1:${keyId(Buffer.from(key2, 'base64'))}:`), v);
    // The same signing key, and the channel's secret unchanged.
    assert.equal(h.running.hub.tunnel.keys.kid, kid);
    const again = await db()
      .selectFrom('notification_channels')
      .select('secret')
      .where('id', '=', channel.data.id)
      .executeTakeFirstOrThrow();
    assert.equal(h.running.hub.cipher.open(again.secret), secret);

    // Without the key the values were sealed under, the hub does not start.
    await h.running.close();
    await assert.rejects(h.startAnother({ secretsKey: key1 }), /which this hub does not have/);
    h.running = await h.startAnother({ secretsKey: key2 });
    h.url = h.running.url;
  });
});
