import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../helpers/runs.js';
import { until } from '../helpers/until.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome } from './daemon-harness.js';

/**
 * A large artifact (SVC_TEST_ARTIFACT_MB, default 64 MB) from a real `svc daemon` process: the
 * daemon is killed (SIGKILL) while its upload is under way (a proxy in front of the hub holds the
 * upload after its first megabytes), and a new daemon process on the same home continues from the
 * bytes the hub has; the hub ends with the whole file and its right sha256, and the daemon's
 * memory stays flat (the file is streamed, never held).
 */
const MB = Number(process.env.SVC_TEST_ARTIFACT_MB ?? 64);
const CHUNK = 1024 * 1024;
const HOLD_AFTER = 4 * CHUNK;

/** The agent's file: chunk i is sha256(i) repeated; the test computes the same digest. */
function expectedSha(): string {
  const h = createHash('sha256');
  for (let i = 0; i < MB; i++) {
    const seed = createHash('sha256').update(String(i)).digest();
    h.update(Buffer.alloc(CHUNK, seed));
  }
  return h.digest('hex');
}

/** VmRSS of a process in bytes (Linux). */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** A TCP proxy to `target` that lets an upload (`PUT …`) through up to HOLD_AFTER bytes, then holds it. */
async function holdingProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    let sent = 0;
    let upload: boolean | null = null;
    client.on('data', (chunk) => {
      upload ??= chunk.subarray(0, 4).toString() === 'PUT ';
      if (!upload) return void upstream.write(chunk);
      const room = HOLD_AFTER - sent;
      if (room <= 0) return;
      upstream.write(chunk.subarray(0, room));
      sent += Math.min(room, chunk.length);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('a large artifact survives a SIGKILL of its daemon mid-upload', () => {
  const store = mkdtempSync(path.join(tmpdir(), 'svc-artifacts-'));
  const home = daemonHome();
  const agents = agentDir();
  let h: TestHub;
  let w: World;
  let proxy: Awaited<ReturnType<typeof holdingProxy>>;
  let daemon: LongRunning | undefined;
  const startDaemonProcess = async (hubUrl: string) => {
    const p = startCli(['daemon'], {
      env: {
        SVC_DAEMON_HOME: home.dir,
        SVC_DAEMON_PORT: '0',
        SVC_HUB_URL: hubUrl,
        SVC_REALM_TOKEN: w.tokens.realm_token!,
        SVC_LOG_LEVEL: 'info',
      },
    });
    await p.waitFor(/"msg":"daemon listening"/);
    return p;
  };

  before(async () => {
    h = await startTestHub({ artifactsDir: store });
    w = await buildWorld(h);
    proxy = await holdingProxy(new URL(h.url));
    const big = agents.write(
      'big',
      `const fs = require('fs'), path = require('path'), crypto = require('crypto');
const fd = fs.openSync(path.join(process.env.SVC_ARTIFACTS_DIR, 'big.bin'), 'w');
for (let i = 0; i < ${MB}; i++) {
  fs.writeSync(fd, Buffer.alloc(${CHUNK}, crypto.createHash('sha256').update(String(i)).digest()));
}
fs.closeSync(fd);
fs.writeFileSync(process.env.SVC_OUTPUT, '{}');`,
    );
    await registerAgent(h, w.orgId, 'big', big);
    await registerTeam(h, w.orgId, 'big-team', [{ name: 'make', agent: 'big' }]);
  });
  after(async () => {
    await daemon?.stop('SIGTERM');
    await proxy?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
    rmSync(store, { recursive: true, force: true });
    assert.equal(await killChildren(), 0);
  });

  it('resumes from the hub’s offset after a restart and ends with the right file; daemon RSS grows < 50 MB', async () => {
    const sha256 = expectedSha();
    daemon = await startDaemonProcess(proxy.url);
    const runId = (await h.ok('runs/new', { realm_id: w.realmId, team: 'big-team' })).data.run_id;
    // The upload reached the hub and is held by the proxy: the hub has a partial file.
    const uploads = path.join(store, 'uploads');
    const partial = await until(
      'a partial upload on the hub',
      async () => {
        const files = (() => {
          try {
            return readdirSync(uploads);
          } catch {
            return [];
          }
        })();
        const f = files[0] && path.join(uploads, files[0]);
        return f && statSync(f).size >= CHUNK ? f : null;
      },
      60_000,
    );
    assert.ok(statSync(partial).size <= HOLD_AFTER);
    await daemon.stop('SIGKILL');

    daemon = await startDaemonProcess(h.url);
    const pid = daemon.child.pid!;
    const base = rss(pid);
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss(pid));
    }, 10);
    try {
      const listed = await until(
        'the artifact on the hub',
        async () => {
          const l = (await h.ok('artifacts/list', { run_id: runId })).data;
          return l.length > 0 ? l : null;
        },
        120_000,
      );
      assert.equal(listed[0].name, 'big.bin');
      assert.equal(listed[0].size, MB * CHUNK);
      assert.equal(listed[0].sha256, sha256);
    } finally {
      clearInterval(sampler);
    }
    const stored = createHash('sha256');
    for await (const c of createReadStream(path.join(store, sha256.slice(0, 2), sha256)))
      stored.update(c as Buffer);
    assert.equal(stored.digest('hex'), sha256);
    assert.deepEqual(readdirSync(uploads), [], 'the partial upload is gone');
    assert.ok(peak - base < 50 * 1024 * 1024, `daemon RSS grew ${((peak - base) / 1e6).toFixed(1)} MB`);
  });
});
