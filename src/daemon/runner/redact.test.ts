import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formsOf, MASK, Redactor } from './redact.js';

describe('redaction of secret values from log lines', () => {
  const value = 'sk-live/AbC+123?x=1&y 2';
  const r = new Redactor();
  r.add([value, 'second-secret-value']);

  it('masks the value, JSON-escaped, URL-encoded and base64 forms', () => {
    const b64 = Buffer.from(value).toString('base64');
    const lines = [
      `token=${value}`,
      `{"k":${JSON.stringify(value)}}`,
      `https://x.test/?t=${encodeURIComponent(value)}`,
      `form t=${encodeURIComponent(value).replace(/%20/g, '+')}`,
      `lower ${encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}`,
      `b64 ${b64}`,
      `b64url ${Buffer.from(value).toString('base64url')}`,
      `twice ${value}${value} second-secret-value`,
    ];
    for (const line of lines) {
      const out = r.redact(line);
      assert.ok(out.includes(MASK), line);
      for (const f of formsOf(value)) assert.ok(!out.includes(f), `${line} → ${out}`);
      assert.ok(!out.includes('second-secret-value'));
    }
    assert.equal(r.redact('nothing here'), 'nothing here');
  });

  it('masks the value inside a longer base64 text, whatever its offset', () => {
    for (const prefix of ['', 'a', 'ab', 'abc', 'abcd']) {
      const enc = Buffer.from(`${prefix}${value}-tail`).toString('base64');
      const out = r.redact(enc);
      assert.ok(out.includes(MASK), prefix);
      // What is left cannot be decoded back to the value.
      assert.ok(!Buffer.from(out.replace(MASK, ''), 'base64').toString().includes('sk-live'));
    }
  });

  it('masks each line of a multi-line value', () => {
    const pem = new Redactor();
    pem.add(['-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----']);
    assert.equal(pem.redact('MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'), MASK);
  });
});
