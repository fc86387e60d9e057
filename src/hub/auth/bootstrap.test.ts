import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { killChildren, runCli, startCli } from '../../../test/helpers/cli.js';
import { type TestDatabase, testDatabase } from '../../../test/helpers/db.js';
import { post } from '../../../test/helpers/hub.js';
import { validateHubConfig } from '../../config/hub.js';
import { createLogger } from '../../shared/logger.js';
import { mintToken } from '../../shared/tokens.js';
import { type RunningHub, type StartHubOptions, startHub } from '../server.js';

const log = createLogger('hub', 'silent');

/** Starts hub processes on one test database, each with the SVC_ADMIN_TOKEN value given. */
function hubsOn(db: TestDatabase) {
  return (adminToken?: string) =>
    startHub({
      databaseUrl: db.url,
      ...(db.schema ? { schema: db.schema } : {}),
      log,
      ...(adminToken !== undefined ? { adminToken } : {}),
    });
}

const whoami = (hub: RunningHub, token: string) => post(`${hub.url}/v1/auth/whoami`, {}, token);

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

describe('SVC_ADMIN_TOKEN chosen by the operator (CONTRACT.md §1)', () => {
  after(() => killChildren());

  it('a hand-chosen value works as it is, and a trailing newline from a secret file is trimmed', async () => {
    const chosen = 'svc_tok_my-own_secret-value-2024';
    const { config, errors } = validateHubConfig({ SVC_ADMIN_TOKEN: `${chosen}\n` });
    assert.deepEqual(errors, []);
    const db = testDatabase();
    const start = hubsOn(db);
    try {
      for (const configured of [config!.adminToken!, `  ${chosen}\r\n`]) {
        const hub = await start(configured);
        try {
          const me = await whoami(hub, chosen);
          assert.equal(me.status, 200, JSON.stringify(me.body));
          assert.equal(me.body.data.user.handle, 'admin');
          assert.equal(me.body.data.user.is_site_admin, true);
          const tokens = await hub.database.db.selectFrom('tokens').selectAll().execute();
          assert.deepEqual(
            tokens.map((t) => [t.kind, t.hint, t.revoked_at]),
            [['admin', 'svc_tok_…2024', null]],
          );
        } finally {
          await hub.close();
        }
      }
      // Minted tokens keep their checksum: a near miss of the admin token is not looked up.
      const hub = await start(chosen);
      try {
        const near = await whoami(hub, `${chosen}x`);
        assert.equal(near.status, 401);
        assert.equal(near.body.error.message, 'token is malformed');
      } finally {
        await hub.close();
      }
    } finally {
      await db.cleanup();
    }
  });

  it('a value not of the form svc_tok_ + 16 characters stops the hub, naming SVC_ADMIN_TOKEN', async () => {
    for (const bad of [
      'svc_tok_mysecretvalue',
      'svc_tok_has spaces in the middle',
      'admin-password-1234567',
    ]) {
      const { config, errors } = validateHubConfig({ SVC_ADMIN_TOKEN: bad });
      assert.equal(config, null);
      assert.match(
        errors.join('\n'),
        /^SVC_ADMIN_TOKEN: must be svc_tok_ followed by at least 16 characters/,
      );
      await assert.rejects(
        startHub({ databaseUrl: ':memory:', log, adminToken: bad }),
        /^Error: SVC_ADMIN_TOKEN: /,
      );
    }
    const home = mkdtempSync(path.join(tmpdir(), 'svc-admin-token-'));
    try {
      const r = await runCli(['hub'], {
        env: { SVC_HOME: home, SVC_HUB_PORT: '0', SVC_ADMIN_TOKEN: 'svc_tok_mysecretvalue' },
      });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^error: invalid hub configuration:\n\s+SVC_ADMIN_TOKEN: must be svc_tok_/);
      assert.ok(!r.stderr.includes('mysecretvalue'), 'the value is not printed');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('svc hub answers the value of SVC_ADMIN_TOKEN read from a secret file', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'svc-admin-token-'));
    const chosen = 'svc_tok_from-a-secret-file_0001';
    const hub = startCli(['hub'], {
      env: { SVC_HOME: home, SVC_HUB_PORT: '0', SVC_LOG_LEVEL: 'info', SVC_ADMIN_TOKEN: `${chosen}\n` },
    });
    try {
      await hub.waitFor(/"msg":"hub ready"/);
      const url = /"url":"([^"]+)"/.exec(hub.stdout())![1]!;
      const me = await post(`${url}/v1/auth/whoami`, {}, chosen);
      assert.equal(me.status, 200, JSON.stringify(me.body));
      assert.equal(me.body.data.user.is_site_admin, true);
      assert.ok(!hub.stderr().includes('shown only this once'), 'no token is generated');
    } finally {
      assert.equal(await hub.stop('SIGTERM'), 0);
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('changing the value between starts retires the previous one', async () => {
    const db = testDatabase();
    const start = hubsOn(db);
    const first = 'svc_tok_first-value-0000000001';
    const second = 'svc_tok_second-value-000000002';
    try {
      let hub = await start(first);
      assert.equal((await whoami(hub, first)).status, 200);
      await hub.close();
      hub = await start(second);
      try {
        const old = await whoami(hub, first);
        assert.equal(old.status, 401);
        assert.equal(old.body.error.code, 'unauthorized');
        assert.equal((await whoami(hub, second)).status, 200);
      } finally {
        await hub.close();
      }
      // Back to the first value: it works again and the second stops.
      hub = await start(first);
      try {
        assert.equal((await whoami(hub, first)).status, 200);
        assert.equal((await whoami(hub, second)).status, 401);
      } finally {
        await hub.close();
      }
    } finally {
      await db.cleanup();
    }
  });

  it('sign_out leaves the admin token working, and a start restores it after a revocation', async () => {
    const db = testDatabase();
    const start = hubsOn(db);
    const chosen = 'svc_tok_restored-at-every-start';
    try {
      let hub = await start(chosen);
      try {
        const out = await post(`${hub.url}/v1/auth/sign_out`, {}, chosen);
        assert.deepEqual(out.body, { ok: true, data: { revoked: false, kind: 'admin' } });
        assert.equal((await whoami(hub, chosen)).status, 200);
        const list = await post(`${hub.url}/v1/tokens/list`, {}, chosen);
        const id = list.body.data.find((t: { kind: string }) => t.kind === 'admin').id;
        assert.equal((await post(`${hub.url}/v1/tokens/revoke`, { id }, chosen)).status, 200);
        assert.equal((await whoami(hub, chosen)).status, 401);
      } finally {
        await hub.close();
      }
      hub = await start(chosen);
      try {
        assert.equal((await whoami(hub, chosen)).status, 200);
      } finally {
        await hub.close();
      }
    } finally {
      await db.cleanup();
    }
  });
});
