import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addLines } from './log-lines.js';
import type { LogLine } from './types.js';

const line = (seq: number): LogLine => ({
  seq,
  at: 1_000 + seq,
  stream: 'stdout',
  phase: 'p',
  text: `line ${seq}`,
});
const seqs = (lines: readonly LogLine[]) => lines.map((l) => l.seq);

describe('a run page keeps its log lines', () => {
  it('appends the lines that come next', () => {
    const { lines, dropped } = addLines([line(1), line(2)], [line(3), line(4)], 100);
    assert.deepEqual(seqs(lines), [1, 2, 3, 4]);
    assert.equal(dropped, 0);
  });

  it('keeps each line once, in order, when a read and the stream overlap or cross', () => {
    // The stream's line 5 came before the read of 1–5 answered.
    assert.deepEqual(
      seqs(addLines([line(5)], [line(1), line(2), line(3), line(4), line(5)], 100).lines),
      [1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      seqs(addLines([line(1), line(2), line(3)], [line(2), line(3), line(4)], 100).lines),
      [1, 2, 3, 4],
    );
    assert.deepEqual(seqs(addLines([], [], 100).lines), []);
  });

  it('keeps the newest lines past the limit and counts those left out', () => {
    const { lines, dropped } = addLines([line(1), line(2), line(3)], [line(4), line(5)], 3);
    assert.deepEqual(seqs(lines), [3, 4, 5]);
    assert.equal(dropped, 2);
  });
});
