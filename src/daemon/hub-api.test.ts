import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHubApi, HubRefusedError } from './hub-api.js';

/** A hub's HTTP side that records what it was asked and answers `{ok: true, data: {via: 'http'}}`. */
function httpHub() {
  const asked: string[] = [];
  const fetch = (async (url: string) => {
    asked.push(String(url));
    return new Response(JSON.stringify({ ok: true, data: { via: 'http' } }), { status: 200 });
  }) as typeof globalThis.fetch;
  return { asked, fetch };
}

describe("the daemon's hub calls: over the tunnel when it serves them, else over HTTP", () => {
  const base = { urls: () => ['http://hub.test'], realmToken: 'svc_dt_x' };

  it('a call with the realm token goes over the tunnel when the tunnel answers', async () => {
    const http = httpHub();
    const sent: string[] = [];
    const api = createHubApi({
      ...base,
      fetch: http.fetch,
      tunnel: (op) => {
        sent.push(op);
        return Promise.resolve({ status: 200, body: { ok: true, data: { via: 'tunnel' } } });
      },
    });
    assert.deepEqual(await api.call('runs/report', {}), { via: 'tunnel' });
    assert.deepEqual(sent, ['runs/report']);
    assert.deepEqual(http.asked, []);
  });

  it('over HTTP when there is no tunnel session (null) or it closed before the reply', async () => {
    const http = httpHub();
    let closed = false;
    const api = createHubApi({
      ...base,
      fetch: http.fetch,
      tunnel: () => (closed ? Promise.reject(new Error('the hub tunnel closed')) : null),
    });
    assert.deepEqual(await api.call('runs/report', {}), { via: 'http' });
    closed = true;
    assert.deepEqual(await api.claim('item', 'd1'), { claimed: false });
    assert.deepEqual(http.asked, ['http://hub.test/v1/runs/report', 'http://hub.test/v1/queue/claim']);
  });

  it("a hub's refusal over the tunnel is the same error as over HTTP", async () => {
    const api = createHubApi({
      ...base,
      tunnel: () =>
        Promise.resolve({ status: 409, body: { ok: false, error: { code: 'conflict', message: 'moved' } } }),
    });
    await assert.rejects(
      api.call('runs/report', {}),
      (err: unknown) => err instanceof HubRefusedError && err.status === 409 && err.hubCode === 'conflict',
    );
  });

  it("a user's token never goes over the tunnel (it is not the tunnel's credential)", async () => {
    const http = httpHub();
    const api = createHubApi({
      ...base,
      fetch: http.fetch,
      tunnel: () => {
        throw new Error('must not be used');
      },
    });
    await api.whoami('svc_tok_user');
    assert.deepEqual(http.asked, ['http://hub.test/v1/auth/whoami']);
  });
});
