import assert from 'node:assert/strict';
import { test } from 'node:test';
import { merged } from './merged.js';

test('merged is a spread: a new object, the extra properties win, the base is left as it was', () => {
  const base = { a: 1, b: 'two', c: null as string | null };
  const out = merged(base, { b: 2, d: true });
  assert.deepEqual(out, { a: 1, b: 2, c: null, d: true });
  assert.deepEqual(Object.keys(out), ['a', 'b', 'c', 'd']);
  assert.deepEqual(base, { a: 1, b: 'two', c: null });
  assert.notEqual(out, base);
  // An extra property that is present but undefined replaces the base's, as in a spread.
  assert.deepEqual(merged(base, { a: undefined }), { ...base, a: undefined });
});

test('a property named __proto__ stays a property, as in a spread, and no prototype changes', () => {
  const base = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
  const out = merged(base, { b: 2 }) as Record<string, unknown>;
  assert.deepEqual(Object.keys(out), ['__proto__', 'a', 'b']);
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.equal(out.polluted, undefined);
  const env = merged({ PATH: '/bin' }, JSON.parse('{"__proto__": "x"}') as Record<string, string>);
  assert.deepEqual(Object.entries(env), [
    ['PATH', '/bin'],
    ['__proto__', 'x'],
  ]);
});
