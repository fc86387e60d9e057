import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDatabase } from '../../../test/helpers/db.js';
import { post } from '../../../test/helpers/hub.js';
import { createLogger } from '../../shared/logger.js';
import { mintToken } from '../../shared/tokens.js';
import { type StartHubOptions, startHub } from '../server.js';

const log = createLogger('hub', 'silent');

describe('site administrator bootstrap (CONTRACT.md §1)', () => {
  it('without SVC_ADMIN_TOKEN the first start prints a token once; later starts print none', async () => {
    const db = testDatabase();
    const opts: StartHubOptions = { databaseUrl: db.url, ...(db.schema ? { schema: db.schema } : {}), log };
    const first = await startHub(opts);
    const token = first.bootstrapToken;
    try {
      assert.ok(token?.startsWith('svc_tok_'));
      const me = await post(`${first.url}/v1/auth/whoami`, {}, token);
      assert.equal(me.body.data.user.is_site_admin, true);
    } finally {
      await first.close();
    }
    const second = await startHub(opts);
    try {
      assert.equal(second.bootstrapToken, null);
      assert.equal((await post(`${second.url}/v1/auth/whoami`, {}, token)).status, 200);
    } finally {
      await second.close();
      await db.cleanup();
    }
  });

  it('with SVC_ADMIN_TOKEN the admin holds exactly that token, idempotently', async () => {
    const db = testDatabase();
    const adminToken = mintToken('user');
    const opts: StartHubOptions = {
      databaseUrl: db.url,
      ...(db.schema ? { schema: db.schema } : {}),
      log,
      adminToken,
    };
    try {
      for (let i = 0; i < 2; i++) {
        const hub = await startHub(opts);
        try {
          assert.equal(hub.bootstrapToken, null);
          const me = await post(`${hub.url}/v1/auth/whoami`, {}, adminToken);
          assert.equal(me.body.data.user.handle, 'admin');
          const tokens = await hub.database.db.selectFrom('tokens').select('id').execute();
          assert.equal(tokens.length, 1);
        } finally {
          await hub.close();
        }
      }
      await assert.rejects(startHub({ ...opts, adminToken: 'not-a-token' }), /SVC_ADMIN_TOKEN/);
    } finally {
      await db.cleanup();
    }
  });
});
