import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupsOfRun } from './concurrency.js';

/** Which groups a run is in: one per key of its team definition with a value, plus the request's. */
describe('a run’s concurrency groups', () => {
  const run = {
    realm_id: 'R',
    team_id: 'T',
    agent_id: null,
    workspace_id: 'W',
    inputs: { repo: { name: 'svc', stars: 3, tags: ['a'] }, empty: null },
  };
  const shown = (groups: ReturnType<typeof groupsOfRun>) => groups.map((g) => [g.group, g.limit]);

  it('names one group per key, by realm, key and value, in one order', () => {
    const groups = groupsOfRun(
      run,
      [
        { key: 'workspace', limit: 2 },
        { key: 'realm', limit: 10 },
        { key: 'team', limit: 3 },
        { key: 'inputs.repo.name', limit: 1 },
      ],
      { key: 'deploys', limit: 4 },
    );
    assert.deepEqual(shown(groups), [
      ['R/concurrency_key/deploys', 4],
      ['R/inputs.repo.name/svc', 1],
      ['R/realm/R', 10],
      ['R/team/T', 3],
      ['R/workspace/W', 2],
    ]);
    assert.deepEqual(
      groups.find((g) => g.key === 'inputs.repo.name'),
      { group: 'R/inputs.repo.name/svc', key: 'inputs.repo.name', value: 'svc', limit: 1 },
    );
  });

  it('writes other input values as JSON', () => {
    const groups = groupsOfRun(
      run,
      [
        { key: 'inputs.repo.stars', limit: 1 },
        { key: 'inputs.repo.tags', limit: 1 },
        { key: 'inputs.repo', limit: 1 },
      ],
      null,
    );
    assert.deepEqual(
      groups.map((g) => g.value),
      ['3', '["a"]', '{"name":"svc","stars":3,"tags":["a"]}'],
    );
  });

  it('puts a run with no value for a key in no group for it (paths go through objects only)', () => {
    const noWorkspace = { ...run, workspace_id: null };
    const specs = [
      { key: 'workspace', limit: 1 },
      { key: 'inputs.empty', limit: 1 },
      { key: 'inputs.missing.deeper', limit: 1 },
      { key: 'inputs.repo.tags.0', limit: 1 },
    ];
    assert.deepEqual(groupsOfRun(noWorkspace, specs, null), []);
  });

  it('keys a single-agent run’s team group by its agent', () => {
    const agentRun = { ...run, team_id: null, agent_id: 'A' };
    assert.deepEqual(shown(groupsOfRun(agentRun, [{ key: 'team', limit: 2 }], null)), [['R/team/A', 2]]);
  });

  it('holds a run in the same group twice by the stricter limit', () => {
    const groups = groupsOfRun(
      run,
      [
        { key: 'realm', limit: 5 },
        { key: 'realm', limit: 2 },
      ],
      null,
    );
    assert.deepEqual(shown(groups), [['R/realm/R', 2]]);
  });
});
