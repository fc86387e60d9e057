import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { folderStore } from '../../src/hub/artifacts/store.js';
import { retentionPass } from '../../src/hub/retention/retention.service.js';
import { killChildren, runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Artifacts end to end (CONTRACT.md §13) with a real agent process: a file written into
 * $SVC_ARTIFACTS_DIR and one sent to the daemon's upload route reach the hub whole (sha256, size);
 * the hub serves them with ETag, ranges and safe headers to whoever may view the run only; a body
 * over artifacts.max_bytes is refused while streaming; retention removes old runs' artifacts only.
 */
const MAX = 256 * 1024;
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const REPORT = 'hello artifacts\n'.repeat(100);
const PATCH = '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n';

describe('artifacts', () => {
  const store = mkdtempSync(path.join(tmpdir(), 'svc-artifacts-'));
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  let runId: string;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected freely
  let listed: any[];

  before(async () => {
    h = await startTestHub({ artifactsDir: store });
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token!, artifactsMaxBytes: MAX },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    const saver = agents.write(
      'saver',
      `const fs = require('fs'), path = require('path');
const dir = process.env.SVC_ARTIFACTS_DIR;
fs.writeFileSync(path.join(dir, 'report.txt'), ${JSON.stringify(REPORT)});
(async () => {
  const up = (name, body) => fetch(process.env.SVC_DAEMON_URL + '/v1/artifacts/upload?run_id=' +
    process.env.SVC_RUN_ID + '&name=' + encodeURIComponent(name), { method: 'POST', body });
  const ok = await up('change.patch', ${JSON.stringify(PATCH)});
  // Chunked, with no Content-Length: refused while streaming.
  const big = new ReadableStream({ start(c) { for (let i = 0; i < 40; i++) c.enqueue(new Uint8Array(16 * 1024)); c.close(); } });
  const tooBig = await fetch(process.env.SVC_DAEMON_URL + '/v1/artifacts/upload?run_id=' + process.env.SVC_RUN_ID + '&name=big.bin',
    { method: 'POST', body: big, duplex: 'half' });
  const bad = await up('../escape', 'x');
  fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({
    ok: await ok.json(), tooBig: { status: tooBig.status, body: await tooBig.json() },
    bad: { status: bad.status, body: await bad.json() },
    mode: (fs.statSync(dir).mode & 0o777).toString(8),
    left: fs.readdirSync(dir).filter((n) => n.startsWith('.upload-')),
  }));
})();`,
    );
    await registerAgent(h, w.orgId, 'saver', saver);
    await registerTeam(h, w.orgId, 'saves', [{ name: 'make', agent: 'saver' }]);
    const created = await h.ok('runs/new', { realm_id: w.realmId, team: 'saves' });
    runId = created.data.run_id;
    const done = await waitForRun(h, runId, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
    const out = done.outputs.make;
    assert.deepEqual(out.ok.data, { name: 'change.patch', size: PATCH.length, sha256: sha(PATCH) });
    assert.equal(out.tooBig.status, 413);
    assert.equal(out.tooBig.body.error.code, 'PAYLOAD_TOO_LARGE');
    assert.match(out.tooBig.body.error.message, /artifacts\.max_bytes/);
    assert.equal(out.bad.status, 400);
    assert.equal(out.mode, '700');
    assert.deepEqual(out.left, [], 'a refused upload leaves no partial file');
    listed = (await h.ok('artifacts/list', { run_id: runId })).data;
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
    rmSync(store, { recursive: true, force: true });
    assert.equal(await killChildren(), 0);
  });

  it('lists the file written into SVC_ARTIFACTS_DIR and the one sent to the upload route', () => {
    const byName = Object.fromEntries(listed.map((a) => [a.name, a]));
    assert.deepEqual(Object.keys(byName).sort(), ['change.patch', 'report.txt']);
    assert.equal(byName['report.txt'].sha256, sha(REPORT));
    assert.equal(byName['report.txt'].size, REPORT.length);
    assert.equal(byName['report.txt'].phase, 'make');
    assert.equal(byName['report.txt'].run_id, runId);
    assert.equal(byName['report.txt'].content_type, 'text/plain; charset=utf-8');
    assert.equal(byName['change.patch'].sha256, sha(PATCH));
    // The spool is empty once the hub has everything, and the phase's folder is gone.
    assert.deepEqual(readdirSync(path.join(home.dir, 'artifacts', 'spool')), []);
    assert.deepEqual(readdirSync(path.join(home.dir, 'artifacts')).sort(), ['phases', 'spool']);
    assert.deepEqual(readdirSync(path.join(home.dir, 'artifacts', 'phases')), []);
    // The agent's outputs file was read and removed; its folder is private.
    assert.deepEqual(readdirSync(path.join(home.dir, 'outputs')), []);
    assert.equal((statSync(path.join(home.dir, 'outputs')).mode & 0o777).toString(8), '700');
  });

  it('serves the bytes: full, ranges, ETag and If-None-Match, 416 for a bad range', async () => {
    const a = listed.find((x) => x.name === 'report.txt');
    const url = `${h.url}/v1/artifacts/${a.id}`;
    const auth = { authorization: `Bearer ${w.tokens.realm_member}` };
    const full = await fetch(url, { headers: auth });
    assert.equal(full.status, 200);
    assert.equal(full.headers.get('content-length'), String(REPORT.length));
    assert.equal(full.headers.get('etag'), `"${sha(REPORT)}"`);
    assert.equal(full.headers.get('x-content-type-options'), 'nosniff');
    assert.match(full.headers.get('content-disposition')!, /^inline/);
    assert.equal(await full.text(), REPORT);

    const part = await fetch(url, { headers: { ...auth, range: 'bytes=6-14' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 6-14/${REPORT.length}`);
    assert.equal(await part.text(), REPORT.slice(6, 15));
    const tail = await fetch(url, { headers: { ...auth, range: 'bytes=-4' } });
    assert.equal(await tail.text(), REPORT.slice(-4));

    const same = await fetch(url, { headers: { ...auth, 'if-none-match': `"${sha(REPORT)}"` } });
    assert.equal(same.status, 304);
    const bad = await fetch(url, { headers: { ...auth, range: `bytes=${REPORT.length}-` } });
    assert.equal(bad.status, 416);
    assert.equal(bad.headers.get('content-range'), `bytes */${REPORT.length}`);
    assert.equal(((await bad.json()) as { ok: boolean }).ok, false);

    const patch = listed.find((x) => x.name === 'change.patch');
    const p = await fetch(`${h.url}/v1/artifacts/${patch.id}`, { headers: auth });
    assert.match(p.headers.get('content-disposition')!, /^attachment/, 'only text/plain and images inline');
    assert.equal(await p.text(), PATCH);
  });

  it('answers not_found to whoever may not view the run, unauthorized without a token', async () => {
    const a = listed[0];
    for (const who of ['outsider', 'org_member'] as const) {
      const l = await h.call('artifacts/list', { run_id: runId }, w.tokens[who]);
      assert.equal(l.body.ok, false, who);
      const g = await fetch(`${h.url}/v1/artifacts/${a.id}`, {
        headers: { authorization: `Bearer ${w.tokens[who]}` },
      });
      assert.equal(g.status, 404, who);
      assert.equal(((await g.json()) as { error: { code: string } }).error.code, 'not_found');
    }
    assert.equal((await fetch(`${h.url}/v1/artifacts/${a.id}`)).status, 401);
    assert.equal((await h.call('artifacts/list', { run_id: 'nope' }, w.tokens.realm_member)).status, 404);
    assert.equal((await h.call('artifacts/list', {}, w.tokens.realm_member)).body.code, 'invalid_params');
  });

  it('refuses daemon uploads that are not the run daemon’s or lie about their bytes', async () => {
    const q = (o: Record<string, string>) =>
      new URLSearchParams({ run_id: runId, phase: 'x', name: 'n.txt', ...o });
    const user = await fetch(`${h.url}/v1/artifact-uploads?${q({ sha256: sha('abc'), size: '3' })}`, {
      headers: { authorization: `Bearer ${w.tokens.realm_admin}` },
    });
    assert.equal(user.status, 403);
    const rt = { authorization: `Bearer ${w.tokens.realm_token}` };
    const lie = await fetch(
      `${h.url}/v1/artifact-uploads?${q({ sha256: sha('abc'), size: '3', offset: '0' })}`,
      {
        method: 'PUT',
        headers: rt,
        body: 'abd',
      },
    );
    assert.equal(lie.status, 400);
    assert.match(((await lie.json()) as { error: string }).error, /sha256/);
    const long = await fetch(
      `${h.url}/v1/artifact-uploads?${q({ sha256: sha('abc'), size: '3', offset: '0' })}`,
      {
        method: 'PUT',
        headers: rt,
        body: 'abcdef',
      },
    );
    assert.equal(long.status, 400);
    const badName = await fetch(
      `${h.url}/v1/artifact-uploads?${q({ name: '../x', sha256: sha('abc'), size: '3' })}`,
      {
        headers: rt,
      },
    );
    assert.equal(badName.status, 400);
  });

  it('svc artifacts list and get (to a file and to stdout); another organization gets not_found', async () => {
    const svc = (args: string[], token = w.tokens.realm_member) =>
      runCli(args, { env: { SVC_HUB_URL: h.url, SVC_TOKEN: token! } });
    const list = await svc(['artifacts', 'list', runId]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /report\.txt/);
    assert.match(list.stdout, /change\.patch/);
    const a = listed.find((x) => x.name === 'report.txt');
    const file = path.join(store, 'downloaded.txt');
    const got = await svc(['artifacts', 'get', a.id, '-o', file]);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(readFileSync(file, 'utf8'), REPORT);
    rmSync(file);
    const out = await svc(['artifacts', 'get', a.id]);
    assert.equal(out.stdout, REPORT);
    const refused = await svc(['artifacts', 'get', a.id], w.tokens.outsider);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /not_found/);
  });

  it('retention removes the artifacts of old runs (rows and unreferenced files) and nothing else', async () => {
    const db = h.running.hub.db;
    // A second run, kept: same team, so the same report.txt content (the file is shared).
    const kept = (await h.ok('runs/new', { realm_id: w.realmId, team: 'saves' })).data.run_id;
    assert.equal((await waitForRun(h, kept, ended)).state, 'succeeded');
    const old = Date.now() - 40 * 24 * 3600 * 1000;
    await db.updateTable('runs').set({ completed_at: old }).where('run_id', '=', runId).execute();
    await db.updateTable('artifacts').set({ created_at: old }).where('run_id', '=', runId).execute();
    await h.ok('settings/set', { key: 'retention.artifacts_days', value: '30' });
    const r = await retentionPass(h.running.hub, { batch: 1, store: folderStore(store) });
    assert.equal(r.artifacts, 2);
    assert.equal(r.artifact_bytes, 0, 'the files are still referenced by the kept run');
    assert.deepEqual((await h.ok('artifacts/list', { run_id: runId })).data, []);
    const keptList = (await h.ok('artifacts/list', { run_id: kept })).data;
    assert.equal(keptList.length, 2);
    // The kept run's artifacts become old too, and the run itself is pruned: rows and files go.
    await db.updateTable('runs').set({ completed_at: old }).where('run_id', '=', kept).execute();
    await h.ok('settings/set', { key: 'retention.artifacts_days', value: '' }).catch(() => {});
    await h.ok('settings/set', { key: 'retention.runs_days', value: '30' });
    const r2 = await retentionPass(h.running.hub, { batch: 10, store: folderStore(store) });
    assert.equal(r2.artifacts, 2);
    assert.equal(r2.artifact_bytes, REPORT.length + PATCH.length);
    for (const a of keptList)
      assert.equal(existsSync(path.join(store, a.sha256.slice(0, 2), a.sha256)), false);
    assert.equal((await h.call('artifacts/list', { run_id: kept })).status, 404);
  });
});
