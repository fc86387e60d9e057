import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonTextTooDeep, MAX_JSON_DEPTH, valueTooDeep } from './json-depth.js';

const nested = (n: number, open = '[', close = ']') => `${open.repeat(n)}${close.repeat(n)}`;
const objects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

describe('JSON nesting limit', () => {
  it('counts arrays and objects outside strings, without recursion', () => {
    const cases: [string, number, boolean][] = [
      ['{}', 1, false],
      ['{}', 0, true],
      ['[[1],[2]]', 2, false],
      ['[[1],[[2]]]', 2, true],
      ['{"a":{"b":[1]}}', 3, false],
      ['{"a":{"b":[1]}}', 2, true],
      ['"[[[[[[["', 1, false],
      ['{"k":"\\"[[[[[["}', 1, false],
      ['{"k":"\\\\"}', 1, false],
      ['{"k":"\\\\","l":[[1]]}', 2, true],
      ['[1,2,3]   [4]', 1, false],
      [']]]]{', 1, false],
      ['', 1, false],
      [nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH, false],
      [nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH, true],
      [objects(MAX_JSON_DEPTH), MAX_JSON_DEPTH, false],
      [objects(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH, true],
      [nested(1_000_000), MAX_JSON_DEPTH, true],
    ];
    for (const [text, max, deep] of cases) {
      assert.equal(jsonTextTooDeep(text, max), deep, `${text.slice(0, 40)} (max ${max})`);
    }
    assert.equal(jsonTextTooDeep(nested(MAX_JSON_DEPTH + 1)), true);
  });

  it('measures parsed values the same way, iteratively', () => {
    const deep = JSON.parse(objects(100_000));
    const cases: [unknown, number, boolean][] = [
      [1, 0, false],
      [null, 0, false],
      [{}, 1, false],
      [{}, 0, true],
      [{ a: [1, { b: 2 }] }, 3, false],
      [{ a: [1, { b: { c: 1 } }] }, 3, true],
      [JSON.parse(nested(MAX_JSON_DEPTH)), MAX_JSON_DEPTH, false],
      [JSON.parse(objects(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH, true],
      [deep, MAX_JSON_DEPTH, true],
    ];
    cases.forEach(([value, max, tooDeep], i) => {
      assert.equal(valueTooDeep(value, max), tooDeep, `case ${i} (max ${max})`);
    });
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    assert.equal(valueTooDeep(loop, 3), false);
  });
});
