import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTerminal, RUN_STATES, type RunState } from '../../shared/api/run-states.js';
import { canMove } from './state.js';

// Every allowed move, written out once more by hand so a change to the table is a visible change here.
const ALLOWED: [RunState, RunState][] = [
  ['queued', 'offered'],
  ['queued', 'assigned'],
  ['queued', 'failed'],
  ['queued', 'cancelled'],
  ['queued', 'terminated'],
  ['offered', 'queued'],
  ['offered', 'assigned'],
  ['offered', 'failed'],
  ['offered', 'cancelled'],
  ['offered', 'terminated'],
  ['assigned', 'queued'],
  ['assigned', 'running'],
  ['assigned', 'failed'],
  ['assigned', 'cancelled'],
  ['assigned', 'terminated'],
  ['running', 'awaiting_input'],
  ['running', 'succeeded'],
  ['running', 'failed'],
  ['running', 'cancelled'],
  ['running', 'terminated'],
  ['running', 'lost'],
  ['awaiting_input', 'running'],
  ['awaiting_input', 'failed'],
  ['awaiting_input', 'cancelled'],
  ['awaiting_input', 'terminated'],
  ['awaiting_input', 'lost'],
  ['failed', 'queued'],
  ['cancelled', 'queued'],
  ['lost', 'queued'],
  ['lost', 'terminated'],
];

describe('run state machine (CONTRACT.md §5)', () => {
  it('allows exactly the listed moves and refuses every other pair', () => {
    const allowed = new Set(ALLOWED.map(([a, b]) => `${a}>${b}`));
    for (const from of RUN_STATES) {
      for (const to of RUN_STATES) {
        assert.equal(canMove(from, to), allowed.has(`${from}>${to}`), `${from} → ${to}`);
      }
    }
  });

  it('a run reaches running only from assigned: a daemon holds it first', () => {
    assert.deepEqual(
      RUN_STATES.filter((s) => canMove(s, 'running')),
      ['assigned', 'awaiting_input'],
    );
  });

  it('succeeded and terminated are final; resume leaves only failed, cancelled and lost', () => {
    for (const s of ['succeeded', 'terminated'] as const) {
      assert.ok(RUN_STATES.every((t) => !canMove(s, t)));
    }
    assert.deepEqual(
      RUN_STATES.filter((s) => canMove(s, 'queued') && s !== 'offered' && s !== 'assigned'),
      ['failed', 'cancelled', 'lost'],
    );
    assert.deepEqual(RUN_STATES.filter(isTerminal), [
      'succeeded',
      'failed',
      'cancelled',
      'terminated',
      'lost',
    ]);
  });

  it('a terminal run moves only when a person acts: resume, or force-terminate of a lost run', () => {
    for (const s of RUN_STATES.filter(isTerminal)) {
      const next = RUN_STATES.filter((t) => canMove(s, t));
      assert.ok(
        next.every((t) => t === 'queued' || (s === 'lost' && t === 'terminated')),
        `${s} → ${next.join(',')}`,
      );
    }
  });
});
