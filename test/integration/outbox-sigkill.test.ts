import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { route } from '../../src/daemon/router.js';
import { daemonRoutes } from '../../src/daemon/routes.js';
import { type Database, openDatabase } from '../../src/db/index.js';
import { enqueueCommand, loadCommand } from '../../src/hub/daemons/outbox.repo.js';
import { uuidv7 } from '../../src/shared/ids.js';
import { mintToken } from '../../src/shared/tokens.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { testDatabase } from '../helpers/db.js';
import { post } from '../helpers/hub.js';
import { daemonHome, freePort, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Outbox redelivery after the hub is killed and restarted. The hub is a real `svc hub`
 * process that gets SIGKILL while the daemon is running one of its commands; a new hub process on
 * the same database and port takes over. The command must end acked once, run once, lose nothing.
 */
describe('outbox redelivery after the hub process is killed (SIGKILL) and restarted', () => {
  const tdb = testDatabase();
  const svcHome = mkdtempSync(path.join(tmpdir(), 'svc-sigkill-'));
  const home = daemonHome();
  const adminToken = mintToken('user');
  let port: number;
  let hubUrl: string;
  let hubEnv: Record<string, string>;
  let own: Database;
  let d: RunningDaemon | undefined;
  let hub: LongRunning | undefined;

  // A route that waits until the test lets it finish: holds the command between receipt and ack.
  let entered!: () => void;
  const inHandler = new Promise<void>((r) => (entered = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let runs = 0;
  const gated = route({
    path: 'test/gated',
    summary: 'waits for the test',
    input: z.object({ n: z.number() }),
    transactional: false,
    async handler(_ctx, input) {
      runs++;
      entered();
      await released;
      return { n: input.n };
    },
  });

  const startHubProcess = async (level: string) => {
    const p = startCli(['hub'], { env: { ...hubEnv, SVC_LOG_LEVEL: level } });
    await p.waitFor(/"msg":"hub ready"/);
    return p;
  };

  before(async () => {
    // PostgreSQL: the hub process gets the test's own schema through the URL's `options`.
    own = await openDatabase({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    const databaseUrl = tdb.schema
      ? `${tdb.url}${tdb.url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${tdb.schema}`)}`
      : tdb.url;
    port = await freePort();
    hubUrl = `http://127.0.0.1:${port}`;
    hubEnv = {
      SVC_HOME: svcHome,
      SVC_DATABASE_URL: databaseUrl,
      SVC_HUB_PORT: String(port),
      SVC_ADMIN_TOKEN: adminToken,
    };
  });
  after(async () => {
    release();
    await d?.close();
    await hub?.stop('SIGTERM');
    assert.equal(await killChildren(), 0, 'no hub process left running');
    await own?.close();
    await tdb.cleanup();
    rmSync(svcHome, { recursive: true, force: true });
    home.cleanup();
  });

  it('acks the in-flight command exactly once, runs it once, and delivers what was written while down', {
    timeout: 120_000,
  }, async () => {
    hub = await startHubProcess('info');
    const ok = async (op: string, body: unknown) => {
      const r = await post(`${hubUrl}/v1/${op}`, body, adminToken);
      assert.equal(r.body?.ok, true, `${op}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const org = await ok('orgs/new', { slug: 'sigkill', owner: { email: 'owner@sigkill.test' } });
    const realms = await ok('realms/list', { org_id: org.data.org.id });
    const created = await ok('realms/create_daemon_token', { realm_id: realms.data[0].id, name: 'd1' });
    const daemonId: string = created.data.daemon_id;

    d = await startTestDaemon(home.dir, {
      routes: [...daemonRoutes, gated],
      access: { [gated.path]: { who: 'read' } },
      config: { hubUrls: [hubUrl], realmToken: created.data.token },
    });
    await whenConnected(d);
    const acks: { tx_id: string; replayed: boolean }[] = [];
    d.link!.on('command-acked', (a) => acks.push(a));

    // Written straight into the outbox by another process (this one): the hub's scan delivers it.
    const ids = { newId: () => uuidv7(), now: Date.now };
    const txId = (await enqueueCommand(own.db, ids, daemonId, 'test/gated', { n: 1 })).tx_id;
    await inHandler;
    assert.equal((await loadCommand(own.db, txId))?.status, 'pending');

    // SIGKILL: no graceful close, no chance to record anything.
    const down = once(d.link!, 'disconnected');
    assert.equal(await hub.stop('SIGKILL'), null);
    assert.equal(hub.child.signalCode, 'SIGKILL');
    await down;

    // Written while no hub runs at all.
    const whileDown = (
      await enqueueCommand(own.db, ids, daemonId, 'hug/deliver', {
        review_id: 'rv-down',
        message: { type: 'comment', role: 'reviewer', payload: { comment: 'written while down' } },
      })
    ).tx_id;

    // A new hub process on the same database and port; the daemon reconnects on its own.
    const back = once(d.link!, 'connected');
    hub = await startHubProcess('debug');
    await back;
    const ackLine = (tx: string) => new RegExp(`"tx_id":"${tx}"[^\\n]*"msg":"command acked"`);
    await hub.waitFor(ackLine(whileDown));

    release();
    await hub.waitFor(ackLine(txId));

    const row = await loadCommand(own.db, txId);
    assert.equal(row?.status, 'acked');
    assert.equal(row?.ack_status, 'ok');
    assert.deepEqual(JSON.parse(row!.reply!), { n: 1 });
    assert.ok(row!.attempts >= 2, `sent again by the new hub process (attempts ${row!.attempts})`);
    assert.equal(runs, 1, 'the route body ran exactly once');
    // The first run's ack died with the killed hub's socket; the new hub got the stored reply once.
    assert.deepEqual(
      acks.filter((a) => a.tx_id === txId),
      [{ tx_id: txId, path: 'test/gated', status: 'ok', replayed: true }],
    );
    const ackedLines = hub
      .stdout()
      .split('\n')
      .filter((l) => ackLine(txId).test(l));
    assert.equal(ackedLines.length, 1, 'recorded as acked once');

    const down2 = await loadCommand(own.db, whileDown);
    assert.equal(down2?.status, 'acked');
    assert.equal(down2?.ack_status, 'ok');
    const polled = await d.dispatch('hug/poll_verdict', { review_id: 'rv-down' });
    assert.ok(polled.reply.ok);
    assert.deepEqual(
      (polled.reply.data as { entries: { payload: unknown }[] }).entries.map((e) => e.payload),
      [{ comment: 'written while down' }],
    );
    const pending = await own.db
      .selectFrom('command_outbox')
      .select('tx_id')
      .where('daemon_id', '=', daemonId)
      .where('status', '=', 'pending')
      .execute();
    assert.deepEqual(pending, [], 'nothing left undelivered');

    assert.equal(await hub.stop('SIGTERM'), 0);
    hub = undefined;
  });
});
