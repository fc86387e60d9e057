import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../test/helpers/until.js';
import { type AgentProcess, Spawner } from './spawner.js';

/** Real processes through the real helper: output, exits, groups, and the helper's death. */
describe('the agent spawner', () => {
  let spawner: Spawner;
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  before(() => {
    process.env.SVC_SPAWNER_TEST_MARK = 'daemon-only';
    spawner = new Spawner();
  });
  after(async () => {
    delete process.env.SVC_SPAWNER_TEST_MARK;
    await spawner.close();
  });

  const text = async (s: AgentProcess['stdout']) => {
    let out = '';
    for await (const chunk of s) out += chunk;
    return out;
  };
  const sh = (script: string, extra: Record<string, string> = {}) =>
    spawner.spawn('/bin/sh', ['-c', script], { cwd: '/tmp', env: { ...env, ...extra } });

  it('hands over the output as bytes, then the exit code', async () => {
    const a = sh('echo out; printf "no newline \\342\\234\\223" >&2; exit 3');
    const [pid, out, err, exit] = await Promise.all([a.pid, text(a.stdout), text(a.stderr), a.exit]);
    assert.equal(typeof pid, 'number');
    assert.equal(out, 'out\n');
    assert.equal(err, 'no newline ✓');
    assert.deepEqual(exit, { code: 3, signal: null });
  });

  it('runs many at once, each with its own output', async () => {
    const agents = Array.from({ length: 20 }, (_, i) => sh(`echo agent-${i}`));
    const outs = await Promise.all(agents.map((a) => text(a.stdout)));
    assert.deepEqual(
      outs,
      agents.map((_, i) => `agent-${i}\n`),
    );
    for (const a of agents) assert.deepEqual(await a.exit, { code: 0, signal: null });
  });

  it('gives the agent only the environment it is given, in a working folder and a group of its own', async () => {
    const a = sh('env; pwd; ps -o pgid= -p $$', { ONLY: 'this' });
    const [pid, out] = await Promise.all([a.pid, text(a.stdout), text(a.stderr)]);
    assert.match(out, /^ONLY=this$/m);
    assert.doesNotMatch(out, /SVC_SPAWNER_TEST_MARK|NODE_OPTIONS/);
    assert.match(out, /^\/tmp$/m);
    assert.equal(Number(out.trim().split('\n').at(-1)), pid);
  });

  it('a command that cannot start ends with the reason and no pid', async () => {
    const a = spawner.spawn('/no/such/agent', [], { cwd: '/tmp', env });
    assert.equal(await a.pid, null);
    const exit = await a.exit;
    assert.ok('error' in exit);
    assert.match(exit.error, /ENOENT/);
    const b = spawner.spawn('/bin/sh', [], { cwd: '/no/such/folder', env });
    const noDir = await b.exit;
    assert.ok('error' in noDir);
    assert.match(noDir.error, /ENOENT/);
  });

  it('the daemon signals the agent’s group by its pid', async () => {
    const a = sh('sleep 30 & wait');
    const pid = (await a.pid)!;
    process.kill(-pid, 'SIGTERM');
    assert.deepEqual(await a.exit, { code: null, signal: 'SIGTERM' });
  });

  it('when the helper is killed, its agents are stopped with a reason and the next agent starts a new one', async () => {
    const a = sh('echo started; sleep 30');
    const pid = (await a.pid)!;
    const helper = spawner.helperPid!;
    process.kill(helper, 'SIGKILL');
    const exit = await a.exit;
    assert.ok('error' in exit);
    assert.match(exit.error, /ended unexpectedly; the agent was stopped/);
    await until('the agent’s group to be gone', async () => {
      try {
        process.kill(-pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    const b = sh('echo again');
    assert.equal(await text(b.stdout), 'again\n');
    assert.deepEqual(await b.exit, { code: 0, signal: null });
    assert.notEqual(spawner.helperPid, helper);
  });

  it('a helper that cannot start fails its agents with the reason', async () => {
    const broken = new Spawner('/no/such/node');
    try {
      const exit = await broken.spawn('/bin/true', [], { cwd: '/tmp', env }).exit;
      assert.ok('error' in exit);
      assert.match(exit.error, /could not start the agent spawner \(\/no\/such\/node\): .*ENOENT/);
    } finally {
      await broken.close();
    }
  });

  it('once closed, its helper has exited and an agent is refused', async () => {
    const own = new Spawner();
    const helper = own.helperPid!;
    await own.close();
    assert.throws(() => process.kill(helper, 0), /ESRCH/);
    const exit = await own.spawn('/bin/true', [], { cwd: '/tmp', env }).exit;
    assert.deepEqual(exit, { error: 'the daemon is stopping' });
  });
});
