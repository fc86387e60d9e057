/**
 * An artifact's way daemon → hub → client: a 100 MB file (BENCH_ARTIFACT_MB) sent by the daemon's
 * upload code (src/daemon/hub-api.ts, the realm token of the daemon holding the run) to a hub on
 * SQLite, which checks its sha256 and stores it, then downloaded with GET /v1/artifacts/<id> to a
 * file; vs `cp` of the same file in the same run. One round of each after a warm-up copy.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createHubApi } from '../src/daemon/hub-api.js';
import { startTestHub } from '../test/helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../test/helpers/runs.js';
import { buildWorld } from '../test/helpers/world.js';
import type { BenchResult } from './index.js';

const MB = Number(process.env.BENCH_ARTIFACT_MB ?? 100);

export default async function bench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-artifacts-'));
  const agents = agentDir();
  const h = await startTestHub({ artifactsDir: path.join(dir, 'store') });
  try {
    const file = path.join(dir, 'big.bin');
    const hash = createHash('sha256');
    const out = createWriteStream(file);
    for (let i = 0; i < MB; i++) {
      const chunk = Buffer.alloc(1024 * 1024, createHash('sha256').update(String(i)).digest());
      hash.update(chunk);
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
    }
    await new Promise<void>((r) => out.end(() => r()));
    const sha256 = hash.digest('hex');

    const copy = async () => {
      const t = performance.now();
      await promisify(execFile)('cp', [file, path.join(dir, 'copy.bin')]);
      return (performance.now() - t) / 1000;
    };
    await copy();
    const cpSeconds = await copy();

    // A run held by the world's daemon, as the daemon would hold it when its phase ends.
    const w = await buildWorld(h);
    writeFileSync(path.join(agents.dir, 'noop.cjs'), '');
    await registerAgent(h, w.orgId, 'noop', path.join(agents.dir, 'noop.cjs'));
    await registerTeam(h, w.orgId, 'bench', [{ name: 'p', agent: 'noop' }]);
    const run = (await h.ok('runs/new', { realm_id: w.realmId, team: 'bench' })).data;
    // No daemon process runs here: the run is given to the world's daemon directly.
    await h.running.hub.db
      .updateTable('runs')
      .set({ daemon_id: w.daemonId })
      .where('run_id', '=', run.run_id)
      .execute();
    const hub = createHubApi({ urls: () => [h.url], realmToken: w.tokens.realm_token });

    const t = performance.now();
    const up = await hub.artifactUpload(
      { run_id: run.run_id, phase: 'p', name: 'big.bin', sha256, size: MB * 1024 * 1024 },
      { offset: 0, file },
    );
    const res = await fetch(`${h.url}/v1/artifacts/${up.artifact!.id}`, {
      headers: { authorization: `Bearer ${w.tokens.realm_member}` },
    });
    await pipeline(
      Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
      createWriteStream(path.join(dir, 'down.bin')),
    );
    const pipeSeconds = (performance.now() - t) / 1000;
    return [
      {
        name: `artifact ${MB} MB daemon → hub → client`,
        unit: 'MB/s',
        value: MB / pipeSeconds,
        baseline: { name: 'cp of the same file', value: MB / cpSeconds },
        higherIsBetter: true,
        note: 'upload (hashed on the way in, stored content-addressed) then download, one process for hub and client',
      },
    ];
  } finally {
    await h.close();
    agents.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}
