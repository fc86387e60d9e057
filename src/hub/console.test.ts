import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../test/helpers/hub.js';
import { CONSOLE_CSP } from './console.js';

describe('the hub serves the web console at /', () => {
  let h: TestHub;
  before(async () => {
    h = await startTestHub();
  });
  after(() => h.close());

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${h.url}${path}`, { headers, redirect: 'manual' });

  function assertSecurityHeaders(res: Response) {
    assert.equal(res.headers.get('content-security-policy'), CONSOLE_CSP);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
  }

  it('answers index.html with a strict CSP, no-cache and no inline script or style', async () => {
    assert.equal(
      CONSOLE_CSP,
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    for (const path of ['/', '/index.html']) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      assertSecurityHeaders(res);
      const html = await res.text();
      assert.match(html, /<script type="module" src="\/assets\/console-[A-Z0-9]+\.js"><\/script>/);
      assert.match(html, /<link rel="stylesheet" href="\/assets\/console-[A-Z0-9]+\.css" \/>/);
      assert.doesNotMatch(html, /<style|style=|<script>|<script(?![^>]*\bsrc=)[^>]*>|\bon[a-z]+=/i);
    }
  });

  it('serves content-hashed assets cacheable forever, gzipped when asked, with ETags', async () => {
    const html = await (await get('/')).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.equal(assets.length, 3);
    const types: Record<string, string> = {
      js: 'text/javascript; charset=utf-8',
      css: 'text/css; charset=utf-8',
      svg: 'image/svg+xml',
    };
    for (const path of assets) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), types[path.split('.').pop()!]);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assertSecurityHeaders(res);
      assert.ok((await res.arrayBuffer()).byteLength > 0);
    }
    const js = assets.find((a) => a.endsWith('.js'))!;
    const zipped = await get(js, { 'accept-encoding': 'gzip' });
    assert.equal(zipped.headers.get('content-encoding'), 'gzip');
    assert.equal(zipped.headers.get('vary'), 'accept-encoding');
    const plain = await get(js, { 'accept-encoding': 'identity' });
    assert.equal(plain.headers.get('content-encoding'), null);
    assert.equal(await zipped.text(), await plain.text()); // fetch inflates the gzipped one
    const etag = plain.headers.get('etag')!;
    const again = await get(js, { 'if-none-match': etag });
    assert.equal(again.status, 304);
    const index = await get('/');
    assert.equal((await get('/', { 'if-none-match': index.headers.get('etag')! })).status, 304);
  });

  it('leaves everything else to the API: health, metrics, OpenAPI, and JSON 404s', async () => {
    assert.deepEqual(await (await get('/healthz')).json(), { ok: true });
    assert.deepEqual(await (await get('/readyz')).json(), { ok: true });
    assert.equal((await get('/metrics')).status, 200);
    assert.equal(((await (await get('/openapi.json')).json()) as { openapi: string }).openapi, '3.1.0');
    assert.equal((await h.ok('auth/whoami')).data.user.is_site_admin, true);
    const notFound = {
      ok: false,
      error: { code: 'not_found', message: '' },
    };
    for (const [method, path] of [
      ['POST', '/v1/nope/never'],
      ['GET', '/v1/auth/whoami'],
      ['GET', '/assets/console-NOPE.js'],
      ['GET', '/assets/..%2F..%2Fpackage.json'],
      ['GET', '/assets/.hidden'],
      ['GET', '/elsewhere'],
      ['POST', '/'],
    ] as const) {
      const res = await fetch(`${h.url}${path}`, {
        method,
        ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      const body = (await res.json()) as typeof notFound;
      assert.equal(body.ok, false);
      assert.equal(body.error.code, 'not_found', `${method} ${path}`);
    }
  });
});
