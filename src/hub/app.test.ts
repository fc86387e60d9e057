import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { post, startTestHub, type TestHub } from '../../test/helpers/hub.js';
import { mintToken } from '../shared/tokens.js';

describe('hub HTTP basics', () => {
  let h: TestHub;
  before(async () => {
    h = await startTestHub();
  });
  after(() => h.close());

  it('answers healthz, readyz, metrics and an OpenAPI document generated from the operations', async () => {
    assert.deepEqual(await (await fetch(`${h.url}/healthz`)).json(), { ok: true });
    assert.deepEqual(await (await fetch(`${h.url}/readyz`)).json(), { ok: true });
    const doc = (await (await fetch(`${h.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
    };
    assert.equal(doc.openapi, '3.1.0');
    const schema = doc.paths['/v1/tokens/create']?.post.requestBody.content['application/json']?.schema as {
      required: string[];
    };
    assert.deepEqual(schema.required, ['name']);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    assert.match(metrics, /svc_hub_requests_total\{route="\/healthz",status="200"\} 1/);
  });

  it('refuses a missing, malformed, mistyped and unknown token with unauthorized', async () => {
    const anon = await h.call('auth/whoami', {}, null);
    assert.equal(anon.status, 401);
    assert.deepEqual(anon.body, {
      ok: false,
      error: { code: 'unauthorized', message: 'authentication required' },
    });
    for (const bad of ['nope', 'svc_tok_short', `${mintToken('user').slice(0, -1)}x`, mintToken('user')]) {
      const r = await h.call('auth/whoami', {}, bad);
      assert.equal(r.status, 401, bad);
      assert.equal(r.body.error.code, 'unauthorized');
    }
    const r = await fetch(`${h.url}/v1/auth/whoami`, {
      method: 'POST',
      headers: { authorization: 'Basic x' },
    });
    assert.equal(r.status, 401);
  });

  it('answers malformed JSON, a non-JSON body and a body over 10 MB with bad_request', async () => {
    const bad = await post(`${h.url}/v1/auth/whoami`, '{"a":', h.adminToken);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'bad_request');
    assert.equal(bad.body.ok, false);
    assert.equal(typeof bad.body.error, 'string');
    const text = await fetch(`${h.url}/v1/auth/whoami`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${h.adminToken}` },
      body: 'hello',
    });
    assert.equal(text.status, 400);
    assert.equal(((await text.json()) as { code: string }).code, 'bad_request');
    const big = await post(`${h.url}/v1/tokens/create`, { name: 'x'.repeat(11 * 1024 * 1024) }, h.adminToken);
    assert.equal(big.status, 400);
    assert.equal(big.body.code, 'bad_request');
  });

  it('answers invalid params with details.issues and unknown operations with not_found', async () => {
    const r = await h.call('tokens/create', { name: 5 });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'invalid_params');
    assert.equal(r.body.details.issues[0].field, 'name');
    assert.equal(typeof r.body.details.issues[0].message, 'string');
    const arr = await h.call('tokens/create', [1, 2]);
    assert.equal(arr.body.code, 'invalid_params');
    assert.equal(arr.body.details.issues[0].field, '(body)');
    const missing = await h.call('nope/nothing', {});
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
    assert.equal(missing.body.error.message, 'no operation at POST /v1/nope/nothing');
    // Refused before its body is read, as a missing route: not a complaint about the body.
    const res = await fetch(`${h.url}/v1/runs/nothing?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'not_found');
    // An operation by another method, or with a trailing slash, is not one.
    assert.equal((await fetch(`${h.url}/v1/tokens/create`)).status, 404);
    assert.equal((await h.call('tokens/create/', { name: 'x' })).status, 404);
  });

  it('counts requests per operation in /metrics, unknown ones as one route', async () => {
    await h.call('tokens/create', { name: 5 });
    await h.call('nope/counted', {});
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    assert.match(metrics, /svc_hub_requests_total\{route="\/v1\/tokens\/create",status="400"\} \d+/);
    assert.match(metrics, /svc_hub_requests_total\{route="unknown",status="404"\} \d+/);
    assert.doesNotMatch(metrics, /route="\/v1\/\*"/);
  });
});

describe('stopping the hub', () => {
  it('cuts a connection that has sent nothing instead of waiting the grace period for it', {
    timeout: 60_000,
  }, async () => {
    // A grace period longer than the test's timeout: a stop that waited for it would fail the test.
    const h = await startTestHub({ config: { shutdownGraceMs: 600_000 } });
    const { port } = new URL(h.url);
    const spare = net.connect(Number(port), '127.0.0.1');
    await once(spare, 'connect');
    const cut = once(spare, 'close');
    // A kept-alive connection that sent a request and is idle now is closed too, as before.
    assert.equal((await post(`${h.url}/v1/auth/whoami`, {}, null)).status, 401);
    await h.close();
    await cut;
    assert.equal(spare.destroyed, true);
  });
});
