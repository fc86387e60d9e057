import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../shared/errors.js';
import { normalizeAgentManifest, normalizeTeamDefinition, parseDocument } from './manifest.js';
import { compareVersionsDesc } from './versions.js';

function badRequest(fn: () => unknown, pattern: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof AppError, String(e));
    assert.equal(e.code, 'bad_request');
    assert.match(e.message, pattern);
    return true;
  });
}

const exec = 'name: writer\nversion: 1.0.0\ncommand: ["node", "w.js"]\n';

describe('agent manifests', () => {
  it('reads YAML, JSON and objects alike, with defaults', () => {
    const fromYaml = normalizeAgentManifest(exec, {});
    const fromJson = normalizeAgentManifest(
      JSON.stringify({ name: 'writer', version: '1.0.0', command: ['node', 'w.js'] }),
      {},
    );
    const fromObj = normalizeAgentManifest(
      { name: 'writer', version: '1.0.0', command: ['node', 'w.js'] },
      {},
    );
    for (const m of [fromYaml, fromJson, fromObj]) {
      assert.equal(m.name, 'writer');
      assert.equal(m.agent_type, 'exec');
      assert.equal(m.timeout_ms, 600000);
      assert.deepEqual(m.env, {});
      assert.equal(m.description, '');
    }
  });

  it('request fields override the manifest', () => {
    const m = normalizeAgentManifest(exec, {
      name: 'other',
      version: '2.0.0',
      description: 'd',
      agent_type: 'exec',
    });
    assert.deepEqual([m.name, m.version, m.description], ['other', '2.0.0', 'd']);
  });

  it('YAML anchors and aliases work; env scalars become strings', () => {
    const m = normalizeAgentManifest(
      'base: &env { LANG: C, PORT: 8080, DEBUG: true }\nname: a\nversion: "1"\ncommand: [sh]\nenv: *env\n',
      {},
    );
    assert.deepEqual(m.env, { LANG: 'C', PORT: '8080', DEBUG: 'true' });
  });

  it('refuses invalid manifests with a clear message', () => {
    badRequest(() => normalizeAgentManifest('version: 1.0.0\ncommand: [a]\n', {}), /name is missing/);
    badRequest(() => normalizeAgentManifest('name: a\ncommand: [a]\n', {}), /version is missing/);
    badRequest(
      () => normalizeAgentManifest('name: a\nversion: 1.0\ncommand: [a]\n', {}),
      /version: must be a string/,
    );
    badRequest(() => normalizeAgentManifest('name: a\nversion: "1"\n', {}), /manifest\.command/);
    badRequest(
      () => normalizeAgentManifest('name: a\nversion: "1"\ncommand: "node a.js"\n', {}),
      /list of strings/,
    );
    badRequest(
      () => normalizeAgentManifest('name: a\nversion: "1"\ncommand: []\n', {}),
      /must name a program/,
    );
    badRequest(
      () => normalizeAgentManifest('name: a\nversion: "1"\ncommand: [a]\nenv: {"1X": y}\n', {}),
      /env/,
    );
    badRequest(
      () => normalizeAgentManifest('name: a\nversion: "1"\ncommand: [a]\ntimeout_ms: -5\n', {}),
      /timeout_ms/,
    );
    badRequest(
      () => normalizeAgentManifest('name: a\nversion: "1"\ncommand: [a]\nagent_type: wasm\n', {}),
      /not supported/,
    );
    badRequest(() => normalizeAgentManifest('name: "bad name"\nversion: "1"\ncommand: [a]\n', {}), /name/);
  });

  it('refuses YAML that does not parse, naming the line', () => {
    badRequest(
      () => parseDocument('name: a\ncommand: [a, b\nversion: 1\n', 'manifest'),
      /not valid YAML at line \d+, column \d+/,
    );
    badRequest(() => parseDocument('a: 1\n  b: 2\n', 'manifest'), /at line 1, column 4: Nested mappings/);
  });

  it('refuses multi-document YAML, non-mappings, empty input, bad JSON and alias bombs', () => {
    badRequest(() => parseDocument('name: a\n---\nname: b\n', 'manifest'), /2 YAML documents/);
    badRequest(() => parseDocument('- a\n- b\n', 'manifest'), /mapping/);
    badRequest(() => parseDocument('just text', 'manifest'), /mapping/);
    badRequest(() => parseDocument('   ', 'manifest'), /empty/);
    badRequest(() => parseDocument('{"name": ', 'manifest'), /not valid JSON/);
    badRequest(() => parseDocument([1], 'manifest'), /mapping/);
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 12; i++)
      bomb.push(
        `${'b'.repeat(i + 1)}: &${'b'.repeat(i + 1)} [${Array(9)
          .fill(`*${i === 0 ? 'a' : 'b'.repeat(i)}`)
          .join(', ')}]`,
      );
    badRequest(() => parseDocument(bomb.join('\n'), 'manifest'), /could not be read/);
  });

  it('reads a 1 MB manifest', () => {
    const m = normalizeAgentManifest(
      `${exec}description: "${'x'.repeat(9000)}"\nnotes: "${'y'.repeat(1024 * 1024)}"\n`,
      {},
    );
    assert.equal((m.notes as string).length, 1024 * 1024);
  });
});

describe('team definitions', () => {
  it('validates phases', () => {
    const def = normalizeTeamDefinition(
      'name: t\nversion: "1"\nphases:\n  - name: draft\n    agent: writer\n    review: true\n  - name: check\n    team: lint@2.0.0\n    foreach: inputs.files\n',
      {},
    );
    assert.equal(def.phases.length, 2);
    assert.equal(def.phases[0]!.review, true);
    assert.equal(def.phases[1]!.review, false);
    badRequest(
      () => normalizeTeamDefinition('name: t\nversion: "1"\nphases: []\n', {}),
      /at least one phase/,
    );
    badRequest(
      () =>
        normalizeTeamDefinition(
          'name: t\nversion: "1"\nphases: [{name: a, agent: x}, {name: a, agent: y}]\n',
          {},
        ),
      /duplicate phase name "a"/,
    );
    badRequest(
      () => normalizeTeamDefinition('name: t\nversion: "1"\nphases: [{name: a, agent: x, team: y}]\n', {}),
      /exactly one of agent or team/,
    );
    badRequest(
      () => normalizeTeamDefinition('name: t\nversion: "1"\nphases: [{name: a}]\n', {}),
      /exactly one of agent or team/,
    );
    badRequest(
      () =>
        normalizeTeamDefinition(
          'name: t\nversion: "1"\nphases: [{name: a, agent: x, foreach: inputs.files}]\n',
          {},
        ),
      /foreach is only allowed with team/,
    );
    badRequest(
      () => normalizeTeamDefinition('name: t\nversion: "1"\nphases: [{name: a, agent: "x@"}]\n', {}),
      /NAME@VERSION/,
    );
    badRequest(() => normalizeTeamDefinition('name: t\nversion: "1"\n', {}), /phases/);
  });
});

describe('version order', () => {
  it('sorts newest first by semantic precedence', () => {
    const v = ['1.0.0', '1.10.0', '1.2.0', '2.0.0-rc.1', '2.0.0', 'latest'];
    assert.deepEqual(v.sort(compareVersionsDesc), [
      '2.0.0',
      '2.0.0-rc.1',
      '1.10.0',
      '1.2.0',
      '1.0.0',
      'latest',
    ]);
  });
});
