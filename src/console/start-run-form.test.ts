import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildRunRequest, emptyForm, formFromRun, type StartRunForm } from './start-run-form.js';

const form = (patch: Partial<StartRunForm>): StartRunForm => ({ ...emptyForm(), ...patch });

describe('the start-a-run form', () => {
  it('builds runs/new from a team, version, workspace, fields, reviewers and priority', () => {
    const built = buildRunRequest(
      'realm-1',
      form({
        name: 'hello',
        version: '1.2.0',
        workspaceId: 'ws-1',
        runName: ' nightly ',
        rows: [
          { key: 'branch', value: 'main' },
          { key: '', value: '' },
          { key: 'count', value: '3' },
        ],
        reviewers: 'draft: @ada, grace\n\nship: ada',
        priority: '9',
      }),
    );
    assert.deepEqual(built, {
      ok: true,
      body: {
        realm_id: 'realm-1',
        team: 'hello@1.2.0',
        workspace_id: 'ws-1',
        run_name: 'nightly',
        inputs: { branch: 'main', count: '3' },
        reviewers: { draft: ['ada', 'grace'], ship: ['ada'] },
        priority: 9,
      },
    });
  });

  it('takes an agent by name, the newest version, any daemon and JSON inputs', () => {
    const built = buildRunRequest(
      'r',
      form({ kind: 'agent', name: 'lint', inputsMode: 'json', json: '{"files": ["a.ts"], "n": 2}' }),
    );
    assert.deepEqual(built, {
      ok: true,
      body: { realm_id: 'r', agent: 'lint', inputs: { files: ['a.ts'], n: 2 } },
    });
  });

  it('names the field to fix', () => {
    const bad: [Partial<StartRunForm>, string, RegExp][] = [
      [{ name: '' }, 'name', /choose a team/],
      [{ name: 't', inputsMode: 'json', json: '{nope' }, 'inputs', /not valid JSON/],
      [{ name: 't', inputsMode: 'json', json: '[1]' }, 'inputs', /JSON object/],
      [{ name: 't', rows: [{ key: '', value: 'x' }] }, 'inputs', /input 1 has a value but no name/],
      [
        {
          name: 't',
          rows: [
            { key: 'a', value: '1' },
            { key: 'a', value: '2' },
          ],
        },
        'inputs',
        /"a" is given twice/,
      ],
      [{ name: 't', reviewers: 'just-a-handle' }, 'reviewers', /line 1/],
      [{ name: 't', priority: '10' }, 'priority', /0 to 9/],
      [{ name: 't', priority: '1.5' }, 'priority', /0 to 9/],
    ];
    for (const [patch, field, message] of bad) {
      const built = buildRunRequest('r', form(patch));
      assert.equal(built.ok, false, JSON.stringify(patch));
      if (built.ok) continue;
      assert.equal(built.field, field, JSON.stringify(patch));
      assert.match(built.message, message);
    }
  });

  it('fills in from an ended run: text inputs as fields, others as JSON', () => {
    const run = { execution_type: 'team', inputs: { branch: 'main' }, workspace_id: 'ws' };
    const f = formFromRun(run, { name: 'hello', version: '1.0.0' }, { draft: ['ada'] });
    assert.deepEqual(buildRunRequest('r', f), {
      ok: true,
      body: {
        realm_id: 'r',
        team: 'hello@1.0.0',
        workspace_id: 'ws',
        inputs: { branch: 'main' },
        reviewers: { draft: ['ada'] },
      },
    });
    const typed = formFromRun({ ...run, inputs: { n: 2 } }, { name: 'hello', version: '' }, null);
    assert.equal(typed.inputsMode, 'json');
    assert.deepEqual(buildRunRequest('r', typed), {
      ok: true,
      body: { realm_id: 'r', team: 'hello', workspace_id: 'ws', inputs: { n: 2 } },
    });
  });
});
