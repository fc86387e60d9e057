import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  childFailure,
  childInputs,
  foreachItems,
  foreachKey,
  outputFile,
  phaseEnvironment,
  resolvePath,
  reviewSummary,
  runDirectory,
  startIndex,
} from './plan.js';

const phases = [{ name: 'plan' }, { name: 'build' }, { name: 'ship' }];

describe('where a run begins', () => {
  const cases: [string, string | null, string | null, number][] = [
    ['a new run begins with the first phase', null, null, 0],
    ['a resumed run begins at start_phase', 'build', null, 1],
    ['a run waiting for a review after a restart begins at that phase', 'plan', 'ship', 2],
    ['a review wait needs no start_phase', null, 'build', 1],
    ['an unknown start_phase begins with the first phase', 'gone', null, 0],
    ['an empty start_phase begins with the first phase', '', null, 0],
  ];
  for (const [name, start, review, index] of cases) {
    it(name, () => assert.equal(startIndex(phases, start, review), index));
  }
});

describe('foreach lists and keys', () => {
  const root = {
    inputs: { files: ['a', 'b'], deep: { list: [1] }, text: 'x' },
    phases: { plan: { items: [{ key: 'k' }] } },
  };
  const paths: [string, unknown][] = [
    ['inputs.files', ['a', 'b']],
    ['inputs.deep.list', [1]],
    ['phases.plan.items', [{ key: 'k' }]],
    ['inputs.text', 'x'],
    ['inputs.text.length', undefined],
    ['inputs.missing.list', undefined],
    ['nothing', undefined],
  ];
  for (const [expr, value] of paths) {
    it(`resolvePath reads ${expr}`, () => assert.deepEqual(resolvePath(expr, root), value));
  }

  it('reads the list from the run inputs or an earlier phase’s outputs, and refuses anything else', () => {
    const inputs = { files: ['a', 'b'], name: 'n' };
    const outputs = { plan: { items: [1, 2, 3] } };
    assert.deepEqual(foreachItems('inputs.files', inputs, outputs), { items: ['a', 'b'] });
    assert.deepEqual(foreachItems('phases.plan.items', inputs, outputs), { items: [1, 2, 3] });
    assert.deepEqual(foreachItems('inputs.name', inputs, outputs), {
      error: 'foreach: inputs.name is not a list',
    });
    assert.deepEqual(foreachItems('inputs.none', inputs, outputs), {
      error: 'foreach: inputs.none is not a list',
    });
  });

  const keys: [string, unknown, number, string][] = [
    ['an object with a key uses it', { key: 'alpha', v: 1 }, 3, 'alpha'],
    ['a numeric key becomes text', { key: 7 }, 0, '7'],
    ['a null key becomes text', { key: null }, 0, 'null'],
    ['an object without a key uses the index', { name: 'x' }, 4, '4'],
    ['a string element uses the index', 'key', 2, '2'],
    ['null uses the index', null, 1, '1'],
    ['a list uses the index', ['key'], 5, '5'],
  ];
  for (const [name, item, index, key] of keys) {
    it(`iteration key: ${name}`, () => assert.equal(foreachKey(item, index), key));
  }
});

describe('child runs', () => {
  it('get the parent’s inputs, then the phase’s own, then item and index for a foreach element', () => {
    const run = { a: 1, b: 2, item: 'parent' };
    assert.deepEqual(childInputs(run, {}), run);
    assert.deepEqual(childInputs(run, { inputs: { b: 3, c: 4 } }), { a: 1, b: 3, item: 'parent', c: 4 });
    assert.deepEqual(childInputs(run, { inputs: { b: 3 } }, { item: { key: 'k' }, index: 2 }), {
      a: 1,
      b: 3,
      item: { key: 'k' },
      index: 2,
    });
  });

  const failures: [string, unknown, string | null, string][] = [
    ['failed', 'boom', null, 'child run failed: boom'],
    ['cancelled', null, null, 'child run cancelled'],
    ['failed', 'boom', 'k1', 'child run [k1] failed: boom'],
    ['lost', '', '0', 'child run [0] lost'],
  ];
  for (const [state, error, key, text] of failures) {
    it(`a ${state} child fails its phase with "${text}"`, () =>
      assert.equal(childFailure(state, error, key), text));
  }
});

describe('an agent phase’s environment', () => {
  const base = {
    daemonUrl: 'http://127.0.0.1:4900',
    runId: 'run_1',
    phase: { name: 'build', inputs: { target: 'x' } },
    inputs: { repo: 'r', n: 1 },
    outputs: { plan: { steps: 2 } },
    review: null,
  };

  it('has exactly the SVC_* values, SVC_INPUTS being the run inputs alone', () => {
    assert.deepEqual(phaseEnvironment(base), {
      SVC_DAEMON_URL: 'http://127.0.0.1:4900',
      SVC_RUN_ID: 'run_1',
      SVC_PHASE: 'build',
      SVC_INPUTS: '{"repo":"r","n":1}',
      SVC_PHASE_INPUTS: '{"target":"x"}',
      SVC_PHASE_OUTPUTS: '{"plan":{"steps":2}}',
    });
  });

  it('gives a phase without inputs an empty object', () => {
    const env = phaseEnvironment({ ...base, phase: { name: 'build' }, outputs: {} });
    assert.equal(env.SVC_PHASE_INPUTS, '{}');
    assert.equal(env.SVC_PHASE_OUTPUTS, '{}');
  });

  it('adds SVC_REVIEW only when a reviewer requested changes', () => {
    const review = { action: 'request_changes', comment: 'more tests', round: 2 };
    const env = phaseEnvironment({ ...base, review });
    assert.equal(env.SVC_REVIEW, '{"action":"request_changes","comment":"more tests","round":2}');
    assert.equal('SVC_REVIEW' in phaseEnvironment(base), false);
  });
});

describe('directories', () => {
  it('runs an agent in the workspace, else in a per-run directory under the home', () => {
    assert.equal(runDirectory('/h', { run_id: 'r1', workspace_path: '/ws' }), '/ws');
    assert.equal(runDirectory('/h', { run_id: 'r1', workspace_path: null }), path.join('/h', 'runs', 'r1'));
  });

  it('keeps outputs in one folder under the home, one file per run, phase and epoch', () => {
    assert.equal(outputFile('/h', 'r1', 'build', 3), path.join('/h', 'outputs', 'r1~build-3.json'));
    // No part of the name reaches another folder, and no two phases share one.
    assert.equal(
      outputFile('/h', '../r1', 'a/../b', 1),
      path.join('/h', 'outputs', '..%2Fr1~a%2F..%2Fb-1.json'),
    );
    assert.notEqual(outputFile('/h', 'a~b', 'c', 1), outputFile('/h', 'a', 'b~c', 1));
  });
});

describe('review summaries', () => {
  const long = 'x'.repeat(5000);
  const cases: [string, unknown, string][] = [
    ['a string summary output', { summary: 'did it', other: 1 }, 'did it'],
    ['review_summary before summary', { review_summary: 'read me', summary: 'did it' }, 'read me'],
    ['summary when review_summary is blank', { review_summary: ' ', summary: 'did it' }, 'did it'],
    ['other outputs as JSON', { files: 2 }, '{"files":2}'],
    ['a list as JSON', [{ summary: 'no' }], '[{"summary":"no"}]'],
    ['a summary that is not a string', { summary: 3 }, '{"summary":3}'],
    ['no outputs', undefined, '{}'],
    ['null outputs', null, '{}'],
    ['a blank summary', { summary: '   ' }, '(no summary)'],
    ['a long summary, cut', { summary: long }, `${'x'.repeat(4095)}…`],
  ];
  for (const [name, outputs, text] of cases) {
    it(`uses ${name}`, () => assert.equal(reviewSummary(outputs), text));
  }
});
