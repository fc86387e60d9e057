import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { route } from '../../src/daemon/router.js';
import { daemonRoutes } from '../../src/daemon/routes.js';
import { DAEMON_REPLIES, type DaemonRoutePath } from '../../src/shared/api/daemon.js';
import { tokenKind } from '../../src/shared/tokens.js';
import { call, daemonHome, request, startTestDaemon } from './daemon-harness.js';

const message = (n: number) => ({
  type: 'comment',
  role: 'reviewer',
  payload: { action: 'comment', comment: `c${n}` },
});

describe('daemon HTTP API (local caller, unconnected)', () => {
  const home = daemonHome();
  let d: RunningDaemon;
  const boom = route({
    path: 'test/boom',
    summary: 'fails unexpectedly',
    input: z.object({}),
    async handler() {
      throw new Error('secret detail at /home/x/file.ts:1');
    },
  });
  const start = () =>
    startTestDaemon(home.dir, { routes: [...daemonRoutes, boom], access: { [boom.path]: { who: 'read' } } });
  before(async () => {
    d = await start();
  });
  after(async () => {
    await d.close();
    home.cleanup();
  });

  it('answers healthz, readyz and an OpenAPI 3.1 document generated from the routes', async () => {
    assert.deepEqual((await request(`${d.url}/healthz`, { method: 'GET' })).body, { ok: true });
    assert.deepEqual((await request(`${d.url}/readyz`, { method: 'GET' })).body, { ok: true });
    const doc = (await request(`${d.url}/openapi.json`, { method: 'GET' })).body;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.13.5');
    const schemaOf = (p: string) => doc.paths[`/v1/${p}`].post.requestBody.content['application/json'].schema;
    assert.deepEqual(schemaOf('offer_job').required, ['queue_item_id']);
    assert.equal(schemaOf('offer_job').properties.queue_item_id.minLength, 1);
    assert.deepEqual(schemaOf('hug/poll_verdict').required, ['review_id']);
    assert.ok(schemaOf('hug/deliver').properties.message);
    assert.ok(doc.paths['/v1/tokens/create']);
  });

  it('refuses any request with an Origin header, a CORS preflight and unknown paths included', async () => {
    const origin = { origin: 'https://evil.example' };
    const cases = [
      await call(d.url, 'hug/poll_verdict', { review_id: 'r' }, { headers: origin }),
      await request(`${d.url}/healthz`, { method: 'GET', headers: origin }),
      await request(`${d.url}/v1/offer_job`, {
        method: 'OPTIONS',
        headers: { ...origin, 'access-control-request-method': 'POST' },
      }),
      await request(`${d.url}/v1/nope`, { headers: { origin: 'null' } }),
    ];
    for (const r of cases) {
      assert.equal(r.status, 403);
      assert.equal(r.body.ok, false);
      assert.equal(r.body.error.code, 'WEB_REQUEST_REFUSED');
      assert.equal(typeof r.body.error.message, 'string');
    }
  });

  it('refuses a loopback caller that addresses a Host other than localhost (DNS rebinding)', async () => {
    for (const host of [
      'evil.com',
      'localhost.evil.com',
      `localhost.evil.com:${d.port}`,
      '127.0.0.1.nip.io',
    ]) {
      const r = await call(d.url, 'hug/poll_verdict', { review_id: 'r' }, { headers: { host } });
      assert.equal(r.status, 403, host);
      assert.equal(r.body.error.code, 'HOST_NOT_LOCAL', host);
    }
    for (const host of ['localhost', `localhost:${d.port}`, `127.0.0.1:${d.port}`, `[::1]:${d.port}`]) {
      const r = await call(d.url, 'hug/poll_verdict', { review_id: 'r' }, { headers: { host } });
      assert.equal(r.status, 200, host);
    }
  });

  it('answers invalid JSON, a non-JSON body and a body over 10 MB with BAD_REQUEST', async () => {
    const bad = await call(d.url, 'hug/poll_verdict', '{"review_id":');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.ok, false);
    assert.equal(bad.body.error.code, 'BAD_REQUEST');
    const text = await request(`${d.url}/v1/hug/poll_verdict`, {
      headers: { 'content-type': 'text/plain' },
      body: 'review_id=r',
    });
    assert.equal(text.status, 400);
    assert.equal(text.body.error.code, 'BAD_REQUEST');
    const big = await call(d.url, 'hug/deliver', {
      review_id: 'big',
      message: { type: 't', role: 'r', payload: { blob: 'x'.repeat(10 * 1024 * 1024 + 1) } },
    });
    assert.equal(big.status, 400);
    assert.equal(big.body.error.code, 'BAD_REQUEST');
    assert.deepEqual((await call(d.url, 'hug/poll_verdict', { review_id: 'big' })).body.data.entries, []);
  });

  it('answers replies that match the API module exactly, as its OpenAPI document describes them', async () => {
    const doc = (await request(`${d.url}/openapi.json`, { method: 'GET' })).body;
    const described = doc.paths['/v1/hug/poll_verdict'].post.responses['200'].content['application/json'];
    assert.deepEqual(described.schema, { $ref: '#/components/schemas/HugPollVerdictReply' });
    assert.ok(doc.components.schemas.HugPollVerdictReply);
    const check = async (path: DaemonRoutePath, body: unknown) => {
      const r = await call(d.url, path, body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const schema = z.strictObject({ ok: z.literal(true), data: DAEMON_REPLIES[path] });
      const parsed = schema.safeParse(r.body);
      assert.ok(parsed.success, `${path}: ${parsed.error?.message}`);
    };
    await check('hug/deliver', { review_id: 'shape', message: { type: 't', role: 'r', payload: {} } });
    await check('hug/poll_verdict', { review_id: 'shape' });
    await check('teams/list', {});
    await check('workspaces/list', {});
  });

  it('answers a body that fails the schema with PAYLOAD_INVALID and a list of {path, message}', async () => {
    const missing = await call(d.url, 'hug/poll_verdict', {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'PAYLOAD_INVALID');
    assert.equal(missing.body.error.details[0].path, 'review_id');
    assert.equal(typeof missing.body.error.details[0].message, 'string');
    const empty = await call(d.url, 'hug/poll_verdict', { review_id: '' });
    assert.equal(empty.body.error.code, 'PAYLOAD_INVALID');
    const wrong = await call(d.url, 'hug/deliver', {
      review_id: 5,
      message: { type: 't', role: 7, payload: [] },
    });
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.body.error.details.map((i: { path: string }) => i.path).sort(), [
      'message.payload',
      'message.role',
      'review_id',
    ]);
    for (const body of ['[1,2]', 'null', '"x"']) {
      const r = await call(d.url, 'hug/poll_verdict', body);
      assert.equal(r.body.error.code, 'PAYLOAD_INVALID', body);
      assert.equal(r.body.error.details[0].path, '(body)', body);
    }
    const offer = await call(d.url, 'offer_job', { queue_item_id: '' });
    assert.equal(offer.body.error.code, 'PAYLOAD_INVALID');
    assert.equal(offer.body.error.details[0].path, 'queue_item_id');
    const offerType = await call(d.url, 'offer_job', { queue_item_id: 'q', daemon_id: '', payload: 'x' });
    assert.deepEqual(offerType.body.error.details.map((i: { path: string }) => i.path).sort(), [
      'daemon_id',
      'payload',
    ]);
  });

  it('answers unknown paths and methods with NOT_FOUND, and unexpected faults with INTERNAL_ERROR', async () => {
    const r = await call(d.url, 'runs/nope', {});
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'NOT_FOUND');
    const get = await request(`${d.url}/v1/offer_job`, { method: 'GET' });
    assert.equal(get.status, 404);
    assert.equal(get.body.error.code, 'NOT_FOUND');
    const boomed = await call(d.url, 'test/boom', {});
    assert.equal(boomed.status, 500);
    assert.deepEqual(boomed.body, {
      ok: false,
      error: { code: 'INTERNAL_ERROR', message: 'internal error' },
    });
  });

  it('queues review messages and hands them out oldest first, once', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await call(d.url, 'hug/deliver', { review_id: 'rev-a', message: message(i) });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { ok: true, data: { review_id: 'rev-a', queued: true } });
    }
    await call(d.url, 'hug/deliver', { review_id: 'rev-b', message: message(99) });
    const first = await call(d.url, 'hug/poll_verdict', { review_id: 'rev-a' });
    assert.equal(first.status, 200);
    const entries = first.body.data.entries;
    assert.deepEqual(
      entries.map((e: { payload: { comment: string } }) => e.payload.comment),
      ['c0', 'c1', 'c2', 'c3', 'c4'],
    );
    assert.deepEqual(Object.keys(entries[0]).sort(), ['created_at', 'payload', 'role', 'type']);
    assert.equal(typeof entries[0].created_at, 'number');
    assert.deepEqual((await call(d.url, 'hug/poll_verdict', { review_id: 'rev-a' })).body, {
      ok: true,
      data: { entries: [] },
    });
    assert.equal((await call(d.url, 'hug/poll_verdict', { review_id: 'rev-b' })).body.data.entries.length, 1);
  });

  it('hands each message to exactly one of several concurrent pollers', async () => {
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(d.url, 'hug/deliver', { review_id: 'rev-c', message: message(i) }),
      ),
    );
    const polls = await Promise.all(
      Array.from({ length: 10 }, () => call(d.url, 'hug/poll_verdict', { review_id: 'rev-c' })),
    );
    const got = polls.flatMap((p) =>
      p.body.data.entries.map((e: { payload: { comment: string } }) => e.payload.comment),
    );
    assert.equal(got.length, 40);
    assert.equal(new Set(got).size, 40);
  });

  it('mints local tokens for local callers, stored hashed', async () => {
    const r = await call(d.url, 'tokens/create', {});
    assert.equal(r.status, 200);
    assert.equal(tokenKind(r.body.data.token), 'local');
    assert.ok(r.body.data.expires_at > Date.now());
    const rows = await d.db.selectFrom('local_tokens').selectAll().execute();
    assert.ok(rows.length >= 1);
    assert.ok(rows.every((row) => !row.hash.includes(r.body.data.token)));
    assert.equal((await call(d.url, 'tokens/create', { ttl_ms: 5 })).body.error.code, 'PAYLOAD_INVALID');
  });

  it('answers a repeated tx_id with the first reply, success or error, also after a restart', async () => {
    const deliver = { tx_id: 'tx-1', review_id: 'rev-tx', message: message(1) };
    const first = await call(d.url, 'hug/deliver', deliver);
    assert.equal(first.status, 200);
    // Same tx_id, different body: the first reply, and nothing runs.
    const again = await call(d.url, 'hug/deliver', { ...deliver, message: message(2) });
    assert.deepEqual(again.body, first.body);
    // Concurrent repeats of a new tx_id run once.
    const burst = await Promise.all(
      Array.from({ length: 10 }, () => call(d.url, 'hug/deliver', { ...deliver, tx_id: 'tx-2' })),
    );
    assert.ok(burst.every((b) => b.status === 200));
    // Errors are first replies too.
    const invalid = await call(d.url, 'hug/deliver', { tx_id: 'tx-3', review_id: 'rev-tx' });
    assert.equal(invalid.body.error.code, 'PAYLOAD_INVALID');
    const noId = await call(d.url, 'offer_job', { tx_id: 'tx-4', queue_item_id: 'q1' });
    assert.equal(noId.status, 503);
    assert.equal(noId.body.error.code, 'DAEMON_ID_UNKNOWN');

    await d.close();
    d = await start();

    const replayed = await call(d.url, 'hug/deliver', deliver);
    assert.equal(replayed.status, 200);
    assert.deepEqual(replayed.body, first.body);
    const stillInvalid = await call(d.url, 'hug/deliver', { ...deliver, tx_id: 'tx-3' });
    assert.equal(stillInvalid.status, 400);
    assert.deepEqual(stillInvalid.body, invalid.body);
    const stillNoId = await call(d.url, 'offer_job', { tx_id: 'tx-4', queue_item_id: 'q1', daemon_id: 'd1' });
    assert.equal(stillNoId.status, 503);
    assert.deepEqual(stillNoId.body, noId.body);
    const polled = await call(d.url, 'hug/poll_verdict', { review_id: 'rev-tx' });
    assert.deepEqual(
      polled.body.data.entries.map((e: { payload: { comment: string } }) => e.payload.comment),
      ['c1', 'c1'],
      'one message for tx-1, one for tx-2, none for the repeats',
    );
  });

  it('keeps review messages across a restart, oldest first', async () => {
    for (let i = 0; i < 3; i++)
      await call(d.url, 'hug/deliver', { review_id: 'rev-durable', message: message(i) });
    await d.close();
    d = await start();
    const r = await call(d.url, 'hug/poll_verdict', { review_id: 'rev-durable' });
    assert.deepEqual(
      r.body.data.entries.map((e: { payload: { comment: string } }) => e.payload.comment),
      ['c0', 'c1', 'c2'],
    );
  });

  it('on 0.0.0.0 tells its agents a loopback URL that the guard lets in', async () => {
    const other = daemonHome();
    const wide = await startTestDaemon(other.dir, { config: { host: '0.0.0.0' } });
    try {
      assert.equal(wide.agentUrl, `http://127.0.0.1:${wide.port}`);
      const r = await call(wide.agentUrl, 'tokens/create', {});
      assert.equal(r.status, 200, JSON.stringify(r.body));
    } finally {
      await wide.close();
      other.cleanup();
    }
  });
});
