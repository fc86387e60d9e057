import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type AccessRequest,
  bearerToken,
  type CredentialVerdict,
  checkAccess,
  isLocalHostHeader,
  isLoopbackAddress,
} from './guard.js';

const local: AccessRequest = {
  hasOrigin: false,
  remoteAddress: '127.0.0.1',
  host: 'localhost:4900',
  connected: false,
  credential: { kind: 'none' },
};
const remote = (connected: boolean, credential: CredentialVerdict): AccessRequest => ({
  hasOrigin: false,
  remoteAddress: '10.231.0.2',
  host: '10.231.0.1:4900',
  connected,
  credential,
});
const user = (inAcl: boolean | null): CredentialVerdict => ({
  kind: 'user_token',
  userId: 'u1',
  role: inAcl ? 'member' : null,
  inAcl,
});
const hubDispatch: CredentialVerdict = { kind: 'dispatch_token', userId: null, role: null, inAcl: null };
const userDispatch = (inAcl: boolean | null): CredentialVerdict => ({
  kind: 'dispatch_token',
  userId: 'u1',
  role: inAcl ? 'operator' : null,
  inAcl,
});

function outcome(req: AccessRequest): string {
  const d = checkAccess(req);
  return d.allow
    ? `allow:${d.caller.kind}${d.caller.kind === 'user' ? `:${d.caller.via}` : ''}`
    : d.error.code;
}

describe('daemon access guard', () => {
  const cases: [string, AccessRequest, string][] = [
    // 1. Origin header, whoever the caller is, whatever it carries.
    ['origin from a loopback caller', { ...local, hasOrigin: true }, 'WEB_REQUEST_REFUSED'],
    ['origin before the Host check', { ...local, hasOrigin: true, host: 'evil.com' }, 'WEB_REQUEST_REFUSED'],
    [
      'origin from a remote caller with a valid token',
      { ...remote(true, hubDispatch), hasOrigin: true },
      'WEB_REQUEST_REFUSED',
    ],
    // 2. Host of a loopback caller.
    ['loopback, Host evil.com', { ...local, host: 'evil.com' }, 'HOST_NOT_LOCAL'],
    ['loopback, Host localhost.evil.com', { ...local, host: 'localhost.evil.com' }, 'HOST_NOT_LOCAL'],
    ['loopback, Host 127.0.0.1.nip.io', { ...local, host: '127.0.0.1.nip.io:4900' }, 'HOST_NOT_LOCAL'],
    ['loopback, no Host', { ...local, host: undefined }, 'HOST_NOT_LOCAL'],
    ['loopback, Host localhost:bad', { ...local, host: 'localhost:80x' }, 'HOST_NOT_LOCAL'],
    [
      'loopback with a valid token still needs a local Host',
      { ...local, host: 'rebind.example', credential: hubDispatch },
      'HOST_NOT_LOCAL',
    ],
    // 3. Loopback callers pass without credentials, connected or not.
    ['loopback, Host localhost', { ...local, host: 'localhost' }, 'allow:local'],
    ['loopback, Host LOCALHOST:1', { ...local, host: 'LOCALHOST:1' }, 'allow:local'],
    ['loopback, Host 127.0.0.1:4900', { ...local, host: '127.0.0.1:4900' }, 'allow:local'],
    ['loopback ::1, Host [::1]:4900', { ...local, remoteAddress: '::1', host: '[::1]:4900' }, 'allow:local'],
    ['mapped loopback', { ...local, remoteAddress: '::ffff:127.0.0.1', host: '[::1]' }, 'allow:local'],
    ['127.8.9.10 is loopback', { ...local, remoteAddress: '127.8.9.10' }, 'allow:local'],
    ['loopback, connected', { ...local, connected: true }, 'allow:local'],
    // 4. Remote caller, daemon not connected: only a local token.
    ['remote, unconnected, no token', remote(false, { kind: 'none' }), 'LOCAL_ONLY'],
    ['remote, unconnected, bad token', remote(false, { kind: 'invalid' }), 'LOCAL_ONLY'],
    ['remote, unconnected, user token', remote(false, user(true)), 'LOCAL_ONLY'],
    ['remote, unconnected, local token', remote(false, { kind: 'local_token' }), 'allow:local_token'],
    [
      'remote, unconnected, Host is irrelevant',
      { ...remote(false, { kind: 'local_token' }), host: 'anything' },
      'allow:local_token',
    ],
    // 5. Remote caller, connected: no or bad token.
    ['remote, connected, no token', remote(true, { kind: 'none' }), 'UNAUTHORIZED'],
    ['remote, connected, bad token', remote(true, { kind: 'invalid' }), 'UNAUTHORIZED'],
    ['remote, connected, local token is not enough', remote(true, { kind: 'local_token' }), 'UNAUTHORIZED'],
    ['remote, connected, hub unreachable', remote(true, { kind: 'unverifiable' }), 'INTERNAL_ERROR'],
    // 6. Accepted tokens.
    ['remote, connected, dispatch token', remote(true, hubDispatch), 'allow:dispatch'],
    ['remote, connected, user in ACL', remote(true, user(true)), 'allow:user:user_token'],
    [
      'remote, connected, dispatch token issued to a user in the ACL',
      remote(true, userDispatch(true)),
      'allow:user:dispatch_token',
    ],
    [
      'remote, connected, dispatch token issued to a user no longer in the ACL',
      remote(true, userDispatch(false)),
      'FORBIDDEN',
    ],
    // 7. User token, user not in the ACL or ACL not loaded.
    ['remote, connected, user not in ACL', remote(true, user(false)), 'FORBIDDEN'],
    ['remote, connected, ACL not loaded', remote(true, user(null)), 'FORBIDDEN'],
    ['remote IPv6 peer', { ...remote(true, { kind: 'none' }), remoteAddress: 'fd00::2' }, 'UNAUTHORIZED'],
    [
      'remote mapped IPv4 peer',
      { ...remote(false, { kind: 'none' }), remoteAddress: '::ffff:10.0.0.2' },
      'LOCAL_ONLY',
    ],
    [
      'unknown peer address is remote',
      { ...remote(false, { kind: 'none' }), remoteAddress: undefined },
      'LOCAL_ONLY',
    ],
  ];
  for (const [name, req, expected] of cases) {
    it(`${name} → ${expected}`, () => assert.equal(outcome(req), expected));
  }

  it('attaches the user id to an accepted user token', () => {
    const d = checkAccess(remote(true, user(true)));
    assert.deepEqual(d.allow && d.caller, { kind: 'user', via: 'user_token', userId: 'u1', role: 'member' });
  });

  it('answers each refusal with the status of the spec', () => {
    const status = (req: AccessRequest) => {
      const d = checkAccess(req);
      return d.allow ? 200 : d.error.status;
    };
    assert.equal(status({ ...local, hasOrigin: true }), 403);
    assert.equal(status({ ...local, host: 'evil.com' }), 403);
    assert.equal(status(remote(false, { kind: 'none' })), 403);
    assert.equal(status(remote(true, { kind: 'none' })), 401);
    assert.equal(status(remote(true, user(false))), 403);
  });

  it('parses loopback addresses, local Host headers and bearer tokens', () => {
    for (const a of ['127.0.0.1', '127.255.0.1', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) {
      assert.equal(isLoopbackAddress(a), true, a);
    }
    for (const a of ['10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', '1127.0.0.1', '', undefined]) {
      assert.equal(isLoopbackAddress(a), false, String(a));
    }
    for (const h of ['localhost', 'localhost:4900', '127.0.0.1', '127.0.0.1:1', '[::1]', '[::1]:4900']) {
      assert.equal(isLocalHostHeader(h), true, h);
    }
    for (const h of ['localhost.evil.com', 'evil.com', '127.0.0.2', '::1', 'localhost:', '', 'x.localhost']) {
      assert.equal(isLocalHostHeader(h), false, h);
    }
    assert.equal(bearerToken(undefined), null);
    assert.equal(bearerToken(''), null);
    assert.equal(bearerToken('Bearer abc'), 'abc');
    assert.equal(bearerToken('bearer  abc '), 'abc');
    assert.equal(bearerToken('Basic abc'), '');
    assert.equal(bearerToken('Bearer a b'), '');
  });
});
