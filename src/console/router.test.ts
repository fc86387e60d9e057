import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterSignIn, formatRoute, NAV, noRunFilters, parseRoute, type Route } from './router.js';

describe('console hash router', () => {
  it('parses every page', () => {
    assert.deepEqual(parseRoute(''), { name: 'runs', ...noRunFilters() });
    assert.deepEqual(parseRoute('#/'), { name: 'runs', ...noRunFilters() });
    assert.deepEqual(parseRoute('#/runs?state=running&team=t1&by=u1&to=2026-11-23'), {
      name: 'runs',
      ...noRunFilters(),
      state: 'running',
      team: 't1',
      by: 'u1',
      to: '2026-11-23',
    });
    assert.deepEqual(parseRoute('#/runs/0193a0b2-7c1d-7000-8000-000000000001'), {
      name: 'run',
      id: '0193a0b2-7c1d-7000-8000-000000000001',
    });
    assert.deepEqual(parseRoute('#/runs/r-1?phase=draft'), { name: 'run', id: 'r-1', phase: 'draft' });
    assert.deepEqual(parseRoute('#/reviews'), { name: 'reviews', all: false });
    assert.deepEqual(parseRoute('#/reviews?all=1'), { name: 'reviews', all: true });
    assert.deepEqual(parseRoute('#/daemons'), { name: 'daemons' });
    assert.deepEqual(parseRoute('#/catalog/'), { name: 'catalog' });
    assert.deepEqual(parseRoute('#/channels?channel=c1'), { name: 'channels', channel: 'c1' });
    for (const name of ['members', 'tokens', 'secrets'] as const) {
      assert.deepEqual(parseRoute(`#/${name}`), { name });
    }
    assert.deepEqual(parseRoute('#/signin?next=%23%2Freviews'), { name: 'signin', next: '#/reviews' });
  });

  it('every page of the navigation parses to itself', () => {
    for (const n of NAV) assert.equal(parseRoute(n.hash).name, n.name, n.hash);
  });

  it('answers notfound for unknown paths, extra segments and odd ids', () => {
    for (const h of ['#/nope', '#/runs/a/b', '#/runs/..%2F..', '#/runs/%E0%A4%A', '#/daemons/x']) {
      assert.equal(parseRoute(h).name, 'notfound', h);
    }
  });

  it('formats routes so that parsing gives them back', () => {
    const routes: Route[] = [
      { name: 'runs', ...noRunFilters() },
      { name: 'runs', ...noRunFilters(), state: 'failed', team: 'a b&c', q: '50%', from: '2026-11-01' },
      { name: 'run', id: 'r-1' },
      { name: 'run', id: 'r-1', phase: 'draft & check' },
      { name: 'reviews', all: true },
      { name: 'reviews', all: false },
      { name: 'daemons' },
      { name: 'catalog' },
      { name: 'members' },
      { name: 'tokens' },
      { name: 'secrets' },
      { name: 'channels', channel: null },
      { name: 'channels', channel: 'c-9' },
      { name: 'signin', next: '#/runs/r-1' },
    ];
    for (const r of routes) assert.deepEqual(parseRoute(formatRoute(r)), r);
    assert.equal(formatRoute({ name: 'runs', ...noRunFilters(), state: 'running' }), '#/runs?state=running');
  });

  it('returns only to pages of the console after signing in', () => {
    assert.equal(afterSignIn('#/runs/r-1'), '#/runs/r-1');
    assert.equal(afterSignIn(null), '#/runs');
    assert.equal(afterSignIn('https://evil.example/'), '#/runs');
    assert.equal(afterSignIn('#/signin?next=%23%2Fsignin'), '#/runs');
    assert.equal(afterSignIn('#/what'), '#/runs');
  });
});
