import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { SERVICE_RESTART } from '../shared/protocol.js';
import { backoffDelay, RESTART_CAP_MS, reconnectBackoff } from './backoff.js';
import { hubConfigured, validateDaemonConfig } from './config.js';

describe('daemon config', () => {
  it('has the documented defaults and runs unconnected without a hub', () => {
    const { config, errors } = validateDaemonConfig({});
    assert.deepEqual(errors, []);
    assert.deepEqual(config, {
      home: path.join('./.svc', 'daemon'),
      host: '127.0.0.1',
      port: 4900,
      hubUrls: [],
      realmToken: null,
      shutdownGraceMs: 10_000,
      artifactsMaxBytes: 1024 ** 3,
    });
    assert.equal(hubConfigured(config!), false);
  });

  it('reads the home, address, hub list and realm token', () => {
    const { config } = validateDaemonConfig({
      SVC_HOME: '/tmp/x',
      SVC_DAEMON_HOST: '0.0.0.0',
      SVC_DAEMON_PORT: '5000',
      SVC_HUB_URL: 'http://a:1/, https://b.example ,',
      SVC_REALM_TOKEN: 'svc_dt_abc',
    });
    assert.equal(config?.home, path.join('/tmp/x', 'daemon'));
    assert.equal(config?.host, '0.0.0.0');
    assert.equal(config?.port, 5000);
    assert.deepEqual(config?.hubUrls, ['http://a:1', 'https://b.example']);
    assert.equal(hubConfigured(config!), true);
    assert.equal(validateDaemonConfig({ SVC_DAEMON_HOME: '/d', SVC_HOME: '/h' }).config?.home, '/d');
  });

  it('collects errors instead of throwing', () => {
    const bad = validateDaemonConfig({ SVC_DAEMON_PORT: '70000', SVC_REALM_TOKEN: 'svc_tok_x' });
    assert.equal(bad.config, null);
    assert.equal(bad.errors.length, 2);
    const url = validateDaemonConfig({ SVC_HUB_URL: 'http://ok:1,ftp://nope' });
    assert.equal(url.config, null);
    assert.match(url.errors[0]!, /SVC_HUB_URL: "ftp:\/\/nope"/);
  });
});

describe('reconnect backoff', () => {
  const opts = { baseMs: 100, capMs: 1000 };
  it('keeps the ceiling short after a hub said it was restarting (1012), not after other closes', () => {
    const outage = { baseMs: 500, capMs: 30_000 };
    assert.deepEqual(reconnectBackoff(outage, SERVICE_RESTART), { baseMs: 500, capMs: RESTART_CAP_MS });
    assert.equal(
      backoffDelay(10, reconnectBackoff(outage, SERVICE_RESTART), () => 0.999999),
      4_999,
    );
    for (const code of [null, 1000, 1006, 4000]) assert.deepEqual(reconnectBackoff(outage, code), outage);
    // A smaller cap of the daemon's own stays.
    assert.deepEqual(reconnectBackoff(opts, SERVICE_RESTART), opts);
  });

  it('grows exponentially up to the cap, with full jitter', () => {
    assert.equal(
      backoffDelay(0, opts, () => 0.999999),
      99,
    );
    assert.equal(
      backoffDelay(3, opts, () => 0.5),
      400,
    );
    assert.equal(
      backoffDelay(4, opts, () => 0.999999),
      999,
    );
    assert.equal(
      backoffDelay(50, opts, () => 0.999999),
      999,
    );
    assert.equal(
      backoffDelay(5, opts, () => 0),
      0,
    );
  });
});
