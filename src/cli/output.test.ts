import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cell, col, formatRecord, formatTable, time } from './output.js';

describe('formatTable', () => {
  const rows = [
    { id: 'a1', name: 'alpha', owner: { email: 'x@y.z' }, n: 3 },
    { id: 'b22222', name: null, owner: { email: 'long@example.com' }, n: 10 },
  ];
  const columns = [
    col<(typeof rows)[number]>('ID', 'id'),
    col<(typeof rows)[number]>('NAME', 'name'),
    col<(typeof rows)[number]>('OWNER', (r) => r.owner.email),
    col<(typeof rows)[number]>('N', 'n'),
  ];

  test('pads every column to its widest cell, two spaces apart, no trailing blanks', () => {
    assert.equal(
      formatTable(rows, columns),
      [
        'ID      NAME   OWNER             N',
        'a1      alpha  x@y.z             3',
        'b22222  -      long@example.com  10',
        '',
      ].join('\n'),
    );
  });

  test('a header longer than its cells sets the width', () => {
    assert.equal(
      formatTable([{ v: 'x' }], [col('LONG HEADER', 'v'), col('B', () => 'y')]),
      'LONG HEADER  B\nx            y\n',
    );
  });

  test('no rows: the header alone', () => {
    assert.equal(formatTable([], columns), 'ID  NAME  OWNER  N\n');
  });

  test('the last column is not padded, even when wide cells precede', () => {
    const out = formatTable(
      [
        { a: 'x', b: '' },
        { a: 'y', b: 'long value' },
      ],
      [col('A', 'a'), col('B', 'b')],
    );
    for (const line of out.split('\n')) assert.equal(line, line.trimEnd());
  });
});

describe('cells', () => {
  test('nothing is a dash, booleans are yes/no, objects are JSON, line breaks are spaces', () => {
    assert.equal(cell(null), '-');
    assert.equal(cell(undefined), '-');
    assert.equal(cell(''), '-');
    assert.equal(cell(true), 'yes');
    assert.equal(cell(false), 'no');
    assert.equal(cell({ a: 1 }), '{"a":1}');
    assert.equal(cell('two\nlines'), 'two lines');
    assert.equal(cell(0), '0');
  });

  test('times: integer ms and ISO strings in UTC to the second', () => {
    assert.equal(time(Date.UTC(2024, 4, 1, 12, 30, 5, 999)), '2024-05-01 12:30:05Z');
    assert.equal(time('2024-05-01T12:30:05.000Z'), '2024-05-01 12:30:05Z');
    assert.equal(time(null), '-');
    assert.equal(time('soon'), 'soon');
  });
});

describe('formatRecord', () => {
  test('aligns the labels', () => {
    assert.equal(
      formatRecord([
        ['id', 'x1'],
        ['site admin', true],
        ['name', null],
      ]),
      'id:          x1\nsite admin:  yes\nname:        -\n',
    );
  });
});
