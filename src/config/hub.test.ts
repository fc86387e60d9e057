import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateHubConfig } from './hub.js';

describe('hub configuration', () => {
  const adminTokens: [string, string | null][] = [
    ['svc_tok_my-own_secret-value-2024', 'svc_tok_my-own_secret-value-2024'],
    ['svc_tok_0123456789abcdef', 'svc_tok_0123456789abcdef'],
    ['svc_tok_my-own_secret-value-2024\n', 'svc_tok_my-own_secret-value-2024'],
    ['  svc_tok_my-own_secret-value-2024\r\n', 'svc_tok_my-own_secret-value-2024'],
    ['svc_tok_mysecretvalue', null],
    ['svc_tok_0123456789abcde', null],
    ['svc_tok_with space inside!!', null],
    ['svc_dt_0123456789abcdefghij', null],
    ['my-secret-admin-token-value', null],
    ['', null],
    ['\n', null],
  ];
  for (const [value, expected] of adminTokens) {
    it(`SVC_ADMIN_TOKEN ${JSON.stringify(value)} is ${expected ? 'accepted' : 'refused, naming the variable'}`, () => {
      const { config, errors } = validateHubConfig({ SVC_ADMIN_TOKEN: value });
      if (expected) {
        assert.deepEqual(errors, []);
        assert.equal(config?.adminToken, expected);
      } else {
        assert.equal(config, null);
        assert.equal(errors.length, 1);
        assert.match(errors[0]!, /^SVC_ADMIN_TOKEN: must be svc_tok_ followed by at least 16 characters/);
        if (value.trim()) assert.ok(!errors[0]!.includes(value.trim()), 'the value is not repeated');
      }
    });
  }

  const databases: [string, boolean][] = [
    ['postgres://u@127.0.0.1:5432/db', true],
    ['postgresql://u@127.0.0.1/db', true],
    ['/var/lib/svc/hub.db', true],
    ['hub.db', true],
    ['sqlite:///var/lib/svc/hub.db', false],
    ['file:///var/lib/svc/hub.db', false],
    ['sqlite:/var/lib/svc/hub.db', false],
    ['file:hub.db', false],
    ['C:\\svc\\hub.db', true],
    ['mysql://u@host/db', false],
  ];
  for (const [value, accepted] of databases) {
    it(`SVC_DATABASE_URL ${value} is ${accepted ? 'accepted' : 'refused, naming the variable'}`, () => {
      const { config, errors } = validateHubConfig({ SVC_DATABASE_URL: value });
      if (accepted) {
        assert.deepEqual(errors, []);
        assert.equal(config?.databaseUrl, value);
      } else {
        assert.equal(config, null);
        assert.match(errors[0]!, /^SVC_DATABASE_URL: a postgres:\/\/ URL, or the path of a SQLite file/);
      }
    });
  }

  it('without SVC_ADMIN_TOKEN the hub starts with no configured admin token', () => {
    const { config, errors } = validateHubConfig({});
    assert.deepEqual(errors, []);
    assert.equal(config?.adminToken, undefined);
  });
});
