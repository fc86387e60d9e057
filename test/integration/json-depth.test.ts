import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { MAX_JSON_DEPTH } from '../../src/shared/json-depth.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { connectDaemon } from '../helpers/tunnel-client.js';
import { buildWorld, type World } from '../helpers/world.js';
import { call, daemonHome, startTestDaemon } from './daemon-harness.js';

/** `levels` nested objects around a number, as JSON text (built without recursion). */
const nested = (levels: number) => `${'{"k":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('deeply nested JSON', () => {
  let h: TestHub;
  let w: World;
  const home = daemonHome();
  let d: RunningDaemon;
  const logs: Record<string, unknown>[] = [];
  before(async () => {
    h = await startTestHub({
      log: pino({ level: 'warn' }, { write: (s: string) => void logs.push(JSON.parse(s)) }),
    });
    w = await buildWorld(h);
    await h.ok('agents/register', {
      org_id: w.orgId,
      manifest: { name: 'echo', version: '1.0.0', command: ['true'] },
    });
    d = await startTestDaemon(home.dir);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
  });

  const runsNew = (inputs: string) =>
    h.call('runs/new', `{"realm_id":"${w.realmId}","agent":"echo","inputs":${inputs}}`);

  it('the hub answers bad_request for runs/new inputs nested 5,000 levels deep', async () => {
    const r = await runsNew(nested(5000));
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'bad_request');
    assert.equal(r.body.error, `request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it(`the hub accepts a body nested ${MAX_JSON_DEPTH} levels and refuses one more`, async () => {
    const ok = await runsNew(nested(MAX_JSON_DEPTH - 1));
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const run = await h.ok('runs/get_by_id', { run_id: ok.body.data.run_id });
    assert.equal(JSON.stringify(run.data.inputs), nested(MAX_JSON_DEPTH - 1));
    const over = await runsNew(nested(MAX_JSON_DEPTH));
    assert.equal(over.status, 400);
    assert.equal(over.body.code, 'bad_request');
  });

  it('a manifest or definition string nested too deeply answers bad_request', async () => {
    for (const manifest of [nested(5000), `name: deep\nversion: 1.0.0\nx: ${nested(MAX_JSON_DEPTH)}\n`]) {
      const r = await h.call('agents/register', { org_id: w.orgId, manifest });
      assert.equal(r.status, 400, manifest.slice(0, 30));
      assert.equal(r.body.code, 'bad_request');
      assert.match(r.body.error, /manifest is nested deeper than/);
    }
  });

  it('the daemon answers BAD_REQUEST for a body nested 5,000 levels deep', async () => {
    const deep = `{"review_id":"r1","message":{"type":"t","role":"r","payload":${nested(5000)}}}`;
    const r = await call(d.url, 'hug/deliver', deep);
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'BAD_REQUEST');
    assert.equal(r.body.error.message, `request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    const atLimit = `{"review_id":"r1","message":{"type":"t","role":"r","payload":${nested(MAX_JSON_DEPTH - 2)}}}`;
    assert.equal((await call(d.url, 'hug/deliver', atLimit)).status, 200);
    const polled = await call(d.url, 'hug/poll_verdict', { review_id: 'r1' });
    assert.equal(polled.body.data.entries.length, 1);
  });

  it('the hub ignores a tunnel frame nested too deeply, and the connection goes on', async () => {
    await h.ok('teams/register', {
      org_id: w.orgId,
      definition: { name: 'deep-team', version: '1.0.0', phases: [{ name: 'p', agent: 'echo' }] },
    });
    const team = await h.ok('teams/get', { org_id: w.orgId, name: 'deep-team' });
    const daemon = await connectDaemon(h.url, w.tokens.realm_token!);
    try {
      const installing = h.ok('teams/install', { team_version_id: team.data.id, daemon_id: w.daemonId });
      // Runs queued by the tests above are offered first; the install follows.
      let command = await daemon.next('command');
      while (command.path !== 'teams/install') {
        daemon.ack(command.tx_id, { reply: {} });
        command = await daemon.next('command');
      }
      daemon.ws.send(`{"type":"ack","tx_id":"${command.tx_id}","status":"ok","reply":${nested(5000)}}`);
      daemon.ack(command.tx_id, { reply: { installed: true } });
      assert.equal((await installing).data.status, 'installed');
    } finally {
      await daemon.close();
    }
    assert.deepEqual(
      logs.filter((l) => (l.level as number) >= 40).map((l) => l.msg),
      [`tunnel frame is nested deeper than ${MAX_JSON_DEPTH} levels; ignored`],
    );
  });
});
