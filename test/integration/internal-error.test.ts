import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { z } from 'zod';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { route } from '../../src/daemon/router.js';
import { daemonRoutes } from '../../src/daemon/routes.js';
import { createHubApp } from '../../src/hub/app.js';
import type { Hub } from '../../src/hub/context.js';
import type { Op } from '../../src/hub/http/op.js';
import { post, startTestHub, type TestHub } from '../helpers/hub.js';
import { call, daemonHome, startTestDaemon } from './daemon-harness.js';

/** A pino logger whose JSON lines the test can read. */
function capturingLogger(name: string) {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ name, level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

const SECRET = 'secret detail at /home/x/file.ts:1';

/** The exact reply of an unexpected hub fault: no stack, no message of the original error. */
const HUB_500 = { ok: false, error: 'internal error', code: 'internal_error' };

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return `http://127.0.0.1:${addr.port}`;
}

describe('hub: an unexpected fault answers internal_error and is logged', () => {
  let h: TestHub;
  before(async () => {
    h = await startTestHub();
  });
  after(() => h.close());

  it('a throwing operation: 500, the documented body, no stack or detail; the error is in the log', async () => {
    const { log, lines } = capturingLogger('hub');
    const boom: Op = {
      name: 'test/boom',
      summary: 'fails unexpectedly',
      input: z.object({}),
      async handler() {
        throw new Error(SECRET);
      },
    };
    const app = createHubApp({ ...h.running.hub, log } as Hub, [boom]);
    try {
      const url = await listen(app);
      const r = await post(`${url}/v1/test/boom`, {}, h.adminToken);
      assert.equal(r.status, 500);
      assert.deepEqual(r.body, HUB_500);
      const logged = lines.find((l) => l.msg === 'unexpected error');
      assert.ok(logged, JSON.stringify(lines));
      assert.equal(logged.level, 50);
      assert.equal(logged.url, '/v1/test/boom');
      const err = logged.err as { message: string; stack: string };
      assert.equal(err.message, SECRET);
      assert.match(err.stack, /internal-error\.test\.ts/);
    } finally {
      await app.close();
    }
  });

  it('a real operation on the running hub after its database went away: 500 internal_error, logged', async () => {
    const { log, lines } = capturingLogger('hub');
    const lost = await startTestHub({ log });
    try {
      await lost.running.database.close();
      const r = await lost.call('auth/whoami', {});
      assert.equal(r.status, 500);
      assert.deepEqual(r.body, HUB_500);
      const logged = lines.find((l) => l.msg === 'unexpected error');
      assert.ok(logged, JSON.stringify(lines));
      assert.equal(logged.level, 50);
      assert.equal(logged.url, '/v1/auth/whoami');
      assert.match((logged.err as { message: string }).message, /destroyed/);
      // Readiness says so too (503, not a 500).
      assert.equal((await fetch(`${lost.url}/readyz`)).status, 503);
    } finally {
      await lost.close();
    }
  });
});

describe('daemon: an unexpected fault answers INTERNAL_ERROR and is logged', () => {
  const home = daemonHome();
  const { log, lines } = capturingLogger('daemon');
  let d: RunningDaemon;
  const boom = route({
    path: 'test/boom',
    summary: 'fails unexpectedly',
    input: z.object({}),
    async handler() {
      throw new Error(SECRET);
    },
  });
  before(async () => {
    d = await startTestDaemon(home.dir, {
      routes: [...daemonRoutes, boom],
      access: { [boom.path]: { who: 'read' } },
      log,
    });
  });
  after(async () => {
    await d.close();
    home.cleanup();
  });

  it('over HTTP and as a hub command: the documented body, no detail; the error is in the log', async () => {
    const r = await call(d.url, 'test/boom', {});
    assert.equal(r.status, 500);
    assert.deepEqual(r.body, { ok: false, error: { code: 'INTERNAL_ERROR', message: 'internal error' } });
    assert.ok(!JSON.stringify(r.body).includes('secret'));
    const logged = lines.filter((l) => l.msg === 'unexpected error in daemon route');
    assert.equal(logged.length, 1, JSON.stringify(lines));
    assert.equal(logged[0]!.level, 50);
    assert.equal(logged[0]!.path, 'test/boom');
    assert.equal((logged[0]!.err as { message: string }).message, SECRET);

    // The same router answers a hub command (what the tunnel acks) the same way.
    const viaHub = await d.dispatch('test/boom', { tx_id: 'tx-boom' }, { kind: 'hub' });
    assert.equal(viaHub.reply.ok, false);
    assert.deepEqual(!viaHub.reply.ok && viaHub.reply.error.toBody(), {
      code: 'INTERNAL_ERROR',
      message: 'internal error',
    });
    assert.equal(lines.filter((l) => l.msg === 'unexpected error in daemon route').length, 2);
  });
});
