import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../test/helpers/until.js';
import { type AgentProcess, builtNativeHelper, FrameReader, Spawner } from './spawner.js';

/**
 * Real processes through each real helper: output, exits, groups, and the helper's death. The native
 * one is built by `npm ci` (scripts/build-native.mjs); where the suite runs, it must be there.
 */
const native = builtNativeHelper();
for (const kind of ['native', 'node'] as const) {
  describe(`the agent spawner, ${kind} helper`, () => {
    let spawner: Spawner;
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const options = { native: kind === 'native' ? native : null };
    before(() => {
      assert.ok(kind === 'node' || native, 'native/build/svc-spawner is built (npm ci, npm run build)');
      process.env.SVC_SPAWNER_TEST_MARK = 'daemon-only';
      spawner = new Spawner(options);
      assert.equal(spawner.kind, kind);
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
      const nul = await spawner.spawn('/bin/sh', ['-c', 'exit 0'], { cwd: '/tmp', env: { BAD: 'a\0b' } })
        .exit;
      assert.ok('error' in nul);
      assert.match(nul.error, /null bytes|NUL byte/);
      const b = spawner.spawn('/bin/sh', [], { cwd: '/no/such/folder', env });
      const noDir = await b.exit;
      assert.ok('error' in noDir);
      assert.match(noDir.error, /ENOENT/);
    });

    it('finds a command without a slash in the PATH of the agent’s environment, not the daemon’s', async () => {
      const bin = await mkdtemp(path.join(tmpdir(), 'svc-path-'));
      try {
        await writeFile(path.join(bin, 'only-here'), '#!/bin/sh\necho found "$1"\n', { mode: 0o755 });
        const a = spawner.spawn('only-here', ['it'], { cwd: '/tmp', env: { PATH: `${bin}:/usr/bin:/bin` } });
        assert.equal(await text(a.stdout), 'found it\n');
        assert.deepEqual(await a.exit, { code: 0, signal: null });
        const missing = await spawner.spawn('only-here', [], { cwd: '/tmp', env }).exit;
        assert.ok('error' in missing);
        assert.match(missing.error, /only-here ENOENT/);
      } finally {
        await rm(bin, { recursive: true, force: true });
      }
    });

    it('starts the agent with no signal ignored or blocked', async () => {
      // The agent's own status, read by the program the shell becomes (a shell waiting for a child
      // blocks signals meanwhile, so it cannot read its own).
      const a = spawner.spawn('/bin/sh', ['-c', 'exec grep -E "^Sig(Ign|Blk)" /proc/self/status'], {
        cwd: '/tmp',
        env,
      });
      const out = await text(a.stdout);
      assert.deepEqual(await a.exit, { code: 0, signal: null });
      const field = (name: string) =>
        out
          .split('\n')
          .find((l) => l.startsWith(name))!
          .split(/\s+/)[1];
      const mask = (name: string) => BigInt(`0x${field(name)}`);
      assert.equal(mask('SigBlk:'), 0n);
      // Signals 1–31 (glibc's posix_spawn leaves its own two real-time signals, 32 and 33, ignored:
      // every glibc program sets its handlers for them as it starts).
      assert.equal(mask('SigIgn:') & 0x7fffffffn, 0n);
    });

    it('starts the agent with no input, and what it was given intact', async () => {
      const big = 'x'.repeat(100_000);
      const a = sh('cat; printf %s "$BIG" | wc -c; head -c 1000000 /dev/zero | tr "\\0" y', { BIG: big });
      const out = await text(a.stdout);
      assert.deepEqual(await a.exit, { code: 0, signal: null });
      const [size, ...rest] = out.split('\n');
      assert.equal(Number(size), big.length);
      assert.equal(rest.join('\n'), 'y'.repeat(1_000_000));
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
      // A helper that ran and died is not a reason to change helpers.
      assert.equal(spawner.kind, kind);
    });

    it('a helper that cannot start fails its agents with the reason', async () => {
      // A native helper that cannot start hands its agents to the Node helper: both fail here.
      const broken = new Spawner({
        native: kind === 'native' ? '/no/such/helper' : null,
        node: '/no/such/node',
      });
      try {
        const exit = await broken.spawn('/bin/true', [], { cwd: '/tmp', env }).exit;
        assert.ok('error' in exit);
        assert.match(exit.error, /could not start the agent spawner \(\/no\/such\/node\): .*ENOENT/);
      } finally {
        await broken.close();
      }
    });

    if (kind === 'native') {
      it('a native helper that cannot start hands its agents, and the next ones, to the Node helper', async () => {
        const fallback = new Spawner({ native: '/no/such/helper' });
        try {
          const first = fallback.spawn('/bin/sh', ['-c', 'echo first'], { cwd: '/tmp', env });
          assert.equal(await text(first.stdout), 'first\n');
          assert.deepEqual(await first.exit, { code: 0, signal: null });
          assert.equal(fallback.kind, 'node');
          const next = fallback.spawn('/bin/sh', ['-c', 'echo next'], { cwd: '/tmp', env });
          assert.equal(await text(next.stdout), 'next\n');
        } finally {
          await fallback.close();
        }
      });

      it('a native helper that ends before it is ready (built for another machine) hands its agents to the Node helper', async () => {
        const dir = await mkdtemp(path.join(tmpdir(), 'svc-helper-'));
        const fake = path.join(dir, 'svc-spawner');
        await writeFile(fake, '#!/bin/sh\nexit 126\n', { mode: 0o755 });
        const fallback = new Spawner({ native: fake });
        try {
          const a = fallback.spawn('/bin/sh', ['-c', 'echo once'], { cwd: '/tmp', env });
          assert.equal(await text(a.stdout), 'once\n');
          assert.deepEqual(await a.exit, { code: 0, signal: null });
          assert.equal(fallback.kind, 'node');
        } finally {
          await fallback.close();
          await rm(dir, { recursive: true, force: true });
        }
      });
    }

    it('once closed, its helper has exited and an agent is refused', async () => {
      const own = new Spawner(options);
      const helper = own.helperPid!;
      await own.close();
      assert.throws(() => process.kill(helper, 0), /ESRCH/);
      const exit = await own.spawn('/bin/true', [], { cwd: '/tmp', env }).exit;
      assert.deepEqual(exit, { error: 'the daemon is stopping' });
    });
  });
}

describe('the native helper’s frames', () => {
  it('are read whole however the bytes are cut', () => {
    const frame = (id: number, kind: number, payload: Buffer) => {
      const head = Buffer.alloc(9);
      head.writeUInt32LE(5 + payload.length, 0);
      head.writeUInt32LE(id, 4);
      head[8] = kind;
      return Buffer.concat([head, payload]);
    };
    const int = (...v: number[]) => {
      const b = Buffer.alloc(4 * v.length);
      for (const [i, x] of v.entries()) b.writeInt32LE(x, 4 * i);
      return b;
    };
    const bytes = Buffer.concat([
      frame(0, 6, Buffer.alloc(0)),
      frame(1, 1, int(4321)),
      frame(1, 3, Buffer.from('out')),
      frame(2, 2, int(2)),
      frame(1, 5, int(-1, 15)),
      frame(3, 5, int(7, 0)),
    ]);
    for (const cut of [1, 2, 5, 9, 13]) {
      const seen: unknown[] = [];
      const reader = new FrameReader((m) =>
        seen.push('data' in m ? { ...m, data: Buffer.from(m.data).toString() } : m),
      );
      for (let i = 0; i < bytes.length; i += cut) reader.push(bytes.subarray(i, i + cut));
      assert.deepEqual(seen, [
        { id: 0, ready: true },
        { id: 1, pid: 4321 },
        { id: 1, fd: 1, data: 'out' },
        { id: 2, error: 'ENOENT' },
        { id: 1, code: null, signal: 'SIGTERM' },
        { id: 3, code: 7, signal: null },
      ]);
    }
  });
});
