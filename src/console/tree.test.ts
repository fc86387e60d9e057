import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildRunTree, countStates, descendantsOf, flattenTree, type TreeRun } from './tree.js';

type R = TreeRun & { state: string };
const run = (
  id: string,
  parent: string | null,
  phase: string | null = null,
  key: string | null = null,
  state = 'succeeded',
): R => ({
  run_id: id,
  parent_run_id: parent,
  parent_phase: phase,
  iteration_key: key,
  state,
});

describe('child-run tree', () => {
  // root ─ a (phase call) ─ a1
  //      ─ foreach phase "each": keys 10, 2, 1 created in that order
  const runs: R[] = [
    run('00', null),
    run('01', '00', 'call'),
    run('02', '01', 'call'),
    run('05', '00', 'each', '10'),
    run('03', '00', 'each', '2', 'failed'),
    run('04', '00', 'each', '1', 'running'),
  ];

  it('nests children under their parents, phases in order, foreach items by key in natural order', () => {
    const tree = buildRunTree('00', runs);
    assert.deepEqual(
      tree.map((n) => n.run.run_id),
      ['01', '04', '03', '05'],
    );
    assert.deepEqual(
      tree[0]!.children.map((n) => n.run.run_id),
      ['02'],
    );
    const flat = flattenTree(tree);
    assert.deepEqual(
      flat.map((f) => [f.run.run_id, f.depth, f.hasChildren]),
      [
        ['01', 0, true],
        ['02', 1, false],
        ['04', 0, false],
        ['03', 0, false],
        ['05', 0, false],
      ],
    );
    assert.deepEqual(flat[1]!.path, ['01']);
  });

  it('hides collapsed subtrees and counts states over the whole tree', () => {
    const tree = buildRunTree('00', runs);
    assert.deepEqual(
      flattenTree(tree, new Set(['01'])).map((f) => f.run.run_id),
      ['01', '04', '03', '05'],
    );
    assert.deepEqual(countStates(tree), { succeeded: 3, failed: 1, running: 1 });
  });

  it('hangs runs whose parent is not loaded under the root and survives cycles', () => {
    const tree = buildRunTree('00', [run('07', 'missing', 'x'), run('08', '09'), run('09', '08')]);
    const ids = flattenTree(tree).map((f) => f.run.run_id);
    assert.ok(ids.includes('07'));
    assert.ok(ids.length <= 3);
  });

  it('finds the descendants of a child run', () => {
    assert.deepEqual(
      descendantsOf('01', runs).map((r) => r.run_id),
      ['02'],
    );
    assert.deepEqual(descendantsOf('04', runs), []);
    assert.equal(descendantsOf('00', runs).length, 5);
  });
});
