import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

describe('child runs: nesting, foreach, depth cap; offers raced by several daemons', () => {
  let h: TestHub;
  let w: World;
  const daemons: RunningDaemon[] = [];
  const homes = [daemonHome(), daemonHome(), daemonHome()];
  const agents = agentDir();
  const marks = mkdtempSync(path.join(tmpdir(), 'svc-marks-'));
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const tokens = [w.tokens.realm_token!];
    for (const n of ['second', 'third']) {
      tokens.push((await h.ok('realms/create_daemon_token', { realm_id: w.realmId, name: n })).data.token);
    }
    for (const [i, home] of homes.entries()) {
      const d = await startTestDaemon(home.dir, {
        config: { hubUrls: [h.url], realmToken: tokens[i]! },
        runner: { logFlushMs: 50 },
      });
      daemons.push(d);
    }
    await Promise.all(daemons.map(whenConnected));
    // Fails if the same run id is ever executed twice ('wx': the marker must not exist yet).
    const leaf = agents.write(
      'leaf',
      `const fs = require('fs');
const path = require('path');
const inputs = JSON.parse(process.env.SVC_INPUTS);
fs.writeFileSync(path.join(${JSON.stringify(marks)}, process.env.SVC_RUN_ID + '-' + process.env.SVC_PHASE), '', { flag: 'wx' });
fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ echo: inputs.item === undefined ? null : inputs.item, level: inputs.level ?? null }));`,
    );
    await registerAgent(h, w.orgId, 'leaf', leaf);
    await registerTeam(h, w.orgId, 'l3', [{ name: 'work', agent: 'leaf' }]);
    await registerTeam(h, w.orgId, 'l2', [{ name: 'call', team: 'l3' }]);
    await registerTeam(h, w.orgId, 'l1', [{ name: 'call', team: 'l2' }]);
    await registerTeam(h, w.orgId, 'l0', [
      { name: 'call', team: 'l1' },
      { name: 'after', agent: 'leaf' },
    ]);
    await registerTeam(h, w.orgId, 'fan', [
      { name: 'each', team: 'l3', foreach: 'inputs.files', max_parallel: 5 },
      { name: 'after', agent: 'leaf' },
    ]);
  });
  after(async () => {
    for (const d of daemons) await d.close();
    await h?.close();
    for (const x of homes) x.cleanup();
    agents.cleanup();
    rmSync(marks, { recursive: true, force: true });
  });

  const start = async (team: string, inputs: Record<string, unknown> = {}) =>
    (await h.ok('runs/new', { realm_id: w.realmId, team, inputs }, w.tokens.realm_member)).data
      .run_id as string;
  const children = async (parentId: string) =>
    (await h.ok('runs/list', { realm_id: w.realmId, limit: 500 })).data.filter(
      (r: { parent_run_id: string | null }) => r.parent_run_id === parentId,
    );

  it('nests runs to call_depth 3; the parent waits and gets the child outputs', async () => {
    const rootId = await start('l0', { level: 'top' });
    const root = await waitForRun(h, rootId, ended, 30_000);
    assert.equal(root.state, 'succeeded', JSON.stringify(root));
    assert.deepEqual(root.outputs.call, { call: { call: { work: { echo: null, level: 'top' } } } });
    let parent = root;
    const path: string[] = [];
    for (const [depth, team] of [
      [1, 'l0'],
      [2, 'l1'],
      [3, 'l2'],
    ] as const) {
      const kids = await children(parent.run_id);
      assert.equal(kids.length, 1);
      const kid = kids[0];
      path.push(`${team}/call`);
      assert.equal(kid.call_depth, depth);
      assert.equal(kid.parent_phase, 'call');
      assert.equal(kid.root_run_id, rootId);
      assert.deepEqual(kid.call_path, path);
      assert.equal(kid.state, 'succeeded');
      parent = kid;
    }
  });

  it('refuses a child over runs.max_call_depth with a clear error, failing the chain', async () => {
    await h.ok('settings/set', { key: 'runs.max_call_depth', value: '2' });
    try {
      const rootId = await start('l0');
      const root = await waitForRun(h, rootId, ended, 30_000);
      assert.equal(root.state, 'failed');
      const mid = (await children(rootId))[0];
      const deep = (await children(mid.run_id))[0];
      assert.equal(deep.call_depth, 2);
      const d = await waitForRun(h, deep.run_id, ended);
      assert.equal(d.state, 'failed');
      assert.match(d.error, /call depth 3 exceeds runs.max_call_depth \(2\)/);
    } finally {
      await h.ok('settings/remove', { key: 'runs.max_call_depth' });
    }
  });

  it('foreach over 20 elements: one child each, with iteration_key, outputs in order', async () => {
    const files = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? { key: `f${i}`, n: i } : `file-${i}`));
    const rootId = await start('fan', { files });
    const root = await waitForRun(h, rootId, ended, 60_000);
    assert.equal(root.state, 'succeeded', JSON.stringify(root.error));
    assert.equal(root.outputs.each.length, 20);
    for (const [i, f] of files.entries()) assert.deepEqual(root.outputs.each[i].work.echo, f);
    const kids = await children(rootId);
    assert.equal(kids.length, 20);
    const keys = kids.map((k: { iteration_key: string }) => k.iteration_key).sort();
    const expected = files.map((f, i) => (typeof f === 'object' ? f.key : String(i))).sort();
    assert.deepEqual(keys, expected);
  });

  it('runs/list: root_run_id lists every descendant of a run, top_level only runs without a parent', async () => {
    const rootId = await start('l0');
    assert.equal((await waitForRun(h, rootId, ended, 30_000)).state, 'succeeded');
    const other = await start('l3');
    const tree = (
      await h.ok('runs/list', { realm_id: w.realmId, root_run_id: rootId }, w.tokens.realm_member)
    ).data as { run_id: string; root_run_id: string; call_depth: number }[];
    assert.deepEqual(
      tree.map((r) => r.call_depth),
      [3, 2, 1],
    );
    assert.ok(tree.every((r) => r.root_run_id === rootId && r.run_id !== other));
    const top = (await h.ok('runs/list', { realm_id: w.realmId, top_level: true, limit: 500 })).data as {
      run_id: string;
      parent_run_id: string | null;
    }[];
    assert.ok(top.some((r) => r.run_id === rootId) && top.some((r) => r.run_id === other));
    assert.ok(top.every((r) => r.parent_run_id === null));
    await waitForRun(h, other, ended, 30_000);
  });

  it('offers each run to every daemon; exactly one claims and runs it', async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, () => start('l3')));
    const runs = await Promise.all(ids.map((id) => waitForRun(h, id, ended, 30_000)));
    const owners = new Set<string>();
    for (const r of runs) {
      assert.equal(r.state, 'succeeded', JSON.stringify(r));
      const t = r.history.map((e: { type: string }) => e.type);
      assert.equal(t.filter((x: string) => x === 'run.claimed').length, 1);
      assert.equal(t.filter((x: string) => x === 'run.started').length, 1);
      owners.add(r.daemon_id);
    }
    const ran = readdirSync(marks).filter((f) => ids.some((id) => f.startsWith(id)));
    assert.equal(ran.length, ids.length, 'each run executed exactly once');
    assert.ok(owners.size >= 1);
    // A late claim of a won item is refused politely.
    const item = await h.running.hub.db
      .selectFrom('runs')
      .select(['queue_item_id', 'daemon_id'])
      .where('run_id', '=', ids[0]!)
      .executeTakeFirstOrThrow();
    const loser = daemons.find((d) => d.daemonId() !== item.daemon_id)!;
    const tokenOf = loser === daemons[0] ? w.tokens.realm_token! : null;
    if (tokenOf) {
      const c = await h.ok(
        'queue/claim',
        { queue_item_id: item.queue_item_id, daemon_id: loser.daemonId() },
        tokenOf,
      );
      assert.equal(c.data.claimed, false);
    }
  });
});
