import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type Reply, startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { createOrgWithOwner } from '../../../test/helpers/world.js';
import { DEFAULT_PASSWORD_COST } from '../../shared/password.js';
import type { RunningHub } from '../server.js';
import { addressKey, retryAfterMs } from './throttle.js';

const WINDOW = 15 * 60 * 1000;
const PASSWORD = 'correct horse battery';

/** auth/sign_in with the reply's Retry-After header. */
async function signIn(url: string, email: string, password: string) {
  const res = await fetch(`${url}/v1/auth/sign_in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const body: Reply['body'] = await res.json();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(' ')[1]);
}

describe('sign-in throttle rules', () => {
  const keys: [string, string][] = [
    ['203.0.113.7', 'ip:203.0.113.7'],
    ['::ffff:203.0.113.7', 'ip:203.0.113.7'],
    ['127.0.0.1', 'ip:127.0.0.1'],
    ['2001:db8:1:2:3:4:5:6', 'ip:2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', 'ip:2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002:ffff::1', 'ip:2001:db8:1:2::/64'],
    ['2001:db8::1', 'ip:2001:db8:0:0::/64'],
    ['::1', 'ip:0:0:0:0::/64'],
    ['fe80::1%eth0', 'ip:fe80:0:0:0::/64'],
    ['64:ff9b::198.51.100.1', 'ip:64:ff9b:0:0::/64'],
  ];
  for (const [ip, key] of keys) {
    it(`client address ${ip} counts under ${key}`, () => assert.equal(addressKey(ip), key));
  }

  const waits: [number[], number, number][] = [
    // [other failures in the window, newest first], limit, wait (window 100, now 1000)
    [[], 3, 0],
    [[990, 980], 3, 0],
    [[990, 980, 950], 3, 50],
    [[990, 980, 950, 920], 3, 50],
    [[999, 999, 999], 3, 99],
  ];
  for (const [times, limit, wait] of waits) {
    it(`with failures at ${JSON.stringify(times)} and a limit of ${limit} the wait is ${wait} ms`, () =>
      assert.equal(retryAfterMs(times, limit, 100, 1000), wait));
  }
});

describe('sign-in throttle', () => {
  let clock = Date.now();
  const now = () => clock;
  const config = { signInAddressLimit: 20 };
  let h: TestHub;
  let email: string;
  before(async () => {
    h = await startTestHub({ now, config });
    await createOrgWithOwner(h, 'throttle');
    email = 'owner@throttle.test';
  });
  after(() => h.close());
  // Every test starts in a fresh window.
  beforeEach(() => {
    clock += WINDOW + 1;
  });

  it('after 10 failed sign-ins the account answers rate_limited with Retry-After, even to the right password', async () => {
    const start = clock;
    for (let i = 0; i < 10; i++) {
      const r = await signIn(h.url, email, 'wrong password');
      assert.equal(r.status, 401, `attempt ${i + 1}`);
    }
    const locked = await signIn(h.url, email, PASSWORD);
    assert.equal(locked.status, 429);
    assert.deepEqual(locked.body, {
      ok: false,
      error: 'too many failed sign-ins for this account; try again in 900 s',
      code: 'rate_limited',
    });
    assert.equal(locked.retryAfter, '900');
    clock = start + 60_000;
    const later = await signIn(h.url, email, 'wrong again');
    assert.equal(later.status, 429);
    assert.equal(later.retryAfter, '840');
    // The refused attempts did not extend the lock: once the window has passed, the password works.
    clock = start + WINDOW;
    const back = await signIn(h.url, email, PASSWORD);
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.match(back.body.data.token, /^svc_tok_/);
  });

  it("a successful sign-in clears the account's failures", async () => {
    for (let i = 0; i < 9; i++) assert.equal((await signIn(h.url, email, 'wrong')).status, 401);
    assert.equal((await signIn(h.url, email, PASSWORD)).status, 200);
    for (let i = 0; i < 10; i++) assert.equal((await signIn(h.url, email, 'wrong')).status, 401);
    assert.equal((await signIn(h.url, email, PASSWORD)).status, 429);
  });

  it('an unknown e-mail address is throttled like an account', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await signIn(h.url, 'ghost@throttle.test', 'x')).status, 401);
    const r = await signIn(h.url, 'Ghost@Throttle.test', 'x');
    assert.equal(r.status, 429);
    assert.equal(r.body.error, 'too many failed sign-ins for this account; try again in 900 s');
  });

  it("the client address has its own budget across accounts, and another account's success does not reset it", async () => {
    for (let i = 0; i < 19; i++) {
      assert.equal((await signIn(h.url, `nobody-${i}@throttle.test`, 'x')).status, 401);
    }
    assert.equal((await signIn(h.url, email, PASSWORD)).status, 200);
    assert.equal((await signIn(h.url, 'nobody-19@throttle.test', 'x')).status, 401);
    const r = await signIn(h.url, email, PASSWORD);
    assert.equal(r.status, 429);
    assert.equal(r.body.error, 'too many failed sign-ins from this address; try again in 900 s');
    assert.equal(r.retryAfter, '900');
  });

  it('the account budget holds across hub processes sharing the database', async () => {
    const other: RunningHub = await h.startAnother({ now, config });
    try {
      for (const url of [h.url, other.url, h.url, other.url, h.url]) {
        assert.equal((await signIn(url, email, 'wrong')).status, 401);
        assert.equal((await signIn(url === h.url ? other.url : h.url, email, 'wrong')).status, 401);
      }
      assert.equal((await signIn(other.url, email, PASSWORD)).status, 429);
      assert.equal((await signIn(h.url, email, PASSWORD)).status, 429);
    } finally {
      await other.close();
    }
  });
});

describe('password hashing on the request path', () => {
  let h: TestHub;
  before(async () => {
    // The real cost: hashes long enough to overlap.
    h = await startTestHub({
      config: { passwordConcurrency: 2, passwordQueue: 8, passwordCost: DEFAULT_PASSWORD_COST },
    });
    await createOrgWithOwner(h, 'gate');
  });
  after(() => h.close());

  it('concurrent sign-ins never run more password hashes at once than configured', async () => {
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => signIn(h.url, `crowd-${i}@gate.test`, 'wrong')),
    );
    assert.deepEqual(
      replies.map((r) => r.status),
      Array(8).fill(401),
    );
    const peak = await metric(h.url, 'svc_hub_password_checks_peak');
    assert.ok(peak >= 1 && peak <= 2, `peak ${peak}`);
    assert.equal(await metric(h.url, 'svc_hub_password_checks_running'), 0);
    assert.equal(await metric(h.url, 'svc_hub_password_checks_refused_total'), 0);
  });

  it('a full waiting list answers rate_limited at once, without counting a failure', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const gate = h.running.hub.passwords;
    const blockers = Array.from({ length: 10 }, () => gate.run(() => hold));
    assert.equal(await metric(h.url, 'svc_hub_password_checks_waiting'), 8);
    const r = await signIn(h.url, 'owner@gate.test', PASSWORD);
    assert.equal(r.status, 429);
    assert.deepEqual(r.body, {
      ok: false,
      error: 'too many sign-ins at once; try again in a moment',
      code: 'rate_limited',
    });
    assert.equal(r.retryAfter, '1');
    assert.equal(await metric(h.url, 'svc_hub_password_checks_refused_total'), 1);
    release();
    await Promise.all(blockers);
    const failures = await h.running.hub.db.selectFrom('sign_in_failures').select('key').execute();
    assert.ok(!failures.some((f) => f.key === 'email:owner@gate.test'));
    assert.equal((await signIn(h.url, 'owner@gate.test', PASSWORD)).status, 200);
  });
});
