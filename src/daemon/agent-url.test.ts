import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentUrlOf } from './server.js';

describe('the URL a daemon gives its agents', () => {
  const cases: [string, string | null][] = [
    ['127.0.0.1', 'http://127.0.0.1:4900'],
    ['127.0.0.2', 'http://127.0.0.2:4900'],
    ['localhost', 'http://127.0.0.1:4900'],
    ['::1', 'http://[::1]:4900'],
    ['[::1]', 'http://[::1]:4900'],
    // A wildcard listener answers on loopback too; 0.0.0.0 is no address to call.
    ['0.0.0.0', 'http://127.0.0.1:4900'],
    ['::', 'http://127.0.0.1:4900'],
    // A specific address of another interface: the daemon listens on loopback for its agents.
    ['10.1.2.3', null],
    ['192.168.1.20', null],
    ['fd00::5', null],
  ];
  for (const [host, url] of cases) {
    it(`${host} → ${url ?? 'a loopback listener of its own'}`, () =>
      assert.equal(agentUrlOf(host, 4900), url));
  }
});
