import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RealmRole } from '../shared/permissions.js';
import { UPLOAD_PATH } from './artifacts/upload.route.js';
import type { Caller } from './caller.js';
import { ROUTE_ACCESS, routeRefusal } from './route-access.js';
import { daemonRoutes } from './routes.js';

const user = (role: RealmRole | null, via: 'user_token' | 'dispatch_token' = 'user_token'): Caller => ({
  kind: 'user',
  userId: 'u1',
  role,
  via,
});

const CALLERS: Record<string, Caller> = {
  hub: { kind: 'hub' },
  local: { kind: 'local' },
  dispatch: { kind: 'dispatch' },
  local_token: { kind: 'local_token' },
  member: user('member'),
  operator: user('operator'),
  admin: user('admin'),
  'operator (dispatch token)': user('operator', 'dispatch_token'),
  'admin (dispatch token)': user('admin', 'dispatch_token'),
};

/** Who may call each route: the callers that pass, by name. Everything else is FORBIDDEN. */
const EXPECTED: Record<string, string[]> = {
  offer_job: Object.keys(CALLERS),
  'teams/list': Object.keys(CALLERS),
  'workspaces/list': Object.keys(CALLERS),
  'runs/execute': ['hub', 'local', 'dispatch'],
  'runs/child_ended': ['hub', 'local', 'dispatch'],
  'teams/install': ['hub', 'local', 'dispatch'],
  'hug/deliver': ['hub', 'local', 'dispatch'],
  'runs/cancel': [
    'hub',
    'local',
    'dispatch',
    'operator',
    'admin',
    'operator (dispatch token)',
    'admin (dispatch token)',
  ],
  'teams/uninstall': [
    'hub',
    'local',
    'dispatch',
    'operator',
    'admin',
    'operator (dispatch token)',
    'admin (dispatch token)',
  ],
  'workspaces/register': ['hub', 'local', 'dispatch', 'admin', 'admin (dispatch token)'],
  'workspaces/unregister': ['hub', 'local', 'dispatch', 'admin', 'admin (dispatch token)'],
  'workspaces/assign_teams': ['hub', 'local', 'dispatch', 'admin', 'admin (dispatch token)'],
  'hug/request': ['local'],
  'hug/poll_verdict': ['local'],
  'tokens/create': ['local'],
  'artifacts/upload': ['local'],
};

describe('daemon route access table', () => {
  it('has exactly one row for every route the daemon serves', () => {
    assert.deepEqual(
      Object.keys(ROUTE_ACCESS).sort(),
      [...daemonRoutes.map((r) => r.path), UPLOAD_PATH].sort(),
    );
    assert.deepEqual(Object.keys(EXPECTED).sort(), Object.keys(ROUTE_ACCESS).sort());
  });

  for (const [path, allowed] of Object.entries(EXPECTED)) {
    it(`${path}: ${allowed.length === Object.keys(CALLERS).length ? 'every admitted caller' : allowed.join(', ')}`, () => {
      for (const [name, caller] of Object.entries(CALLERS)) {
        const refusal = routeRefusal(ROUTE_ACCESS[path]!, caller);
        if (allowed.includes(name)) assert.equal(refusal, null, `${name} may call ${path}`);
        else assert.equal(refusal?.code, 'FORBIDDEN', `${name} may not call ${path}`);
      }
    });
  }

  it('refuses a user whose role is unknown wherever a permission is needed', () => {
    assert.equal(routeRefusal(ROUTE_ACCESS['runs/cancel']!, user(null))?.code, 'FORBIDDEN');
    assert.equal(routeRefusal(ROUTE_ACCESS['teams/list']!, user(null)), null);
  });
});
