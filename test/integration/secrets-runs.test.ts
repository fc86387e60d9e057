import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { TEST_DB } from '../helpers/db.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Secrets in runs (CONTRACT.md §12) with real agent processes: a phase's agent gets the secrets
 * its manifest names as environment variables (realm over organization), no other phase does;
 * whatever form the agent prints them in, the run's logs show `***`; no reply and no database file
 * holds a value; a missing secret fails the run before the agent starts, naming it.
 */
describe('secrets reach their phase only and never the logs', () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  const home = daemonHome();
  const agents = agentDir();
  const REALM_VALUE = 'rk_live/9f8e7d6c5b4a+3210=xyz&q=1';
  const ORG_VALUE = 'org-only-value-5c1a9d0e7b';
  const SHADOWED = 'org-api-key-that-the-realm-shadows';
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    await h.ok('secrets/set', { realm_id: w.realmId, name: 'API_KEY', value: REALM_VALUE });
    await h.ok('secrets/set', { org_id: w.orgId, name: 'API_KEY', value: SHADOWED });
    await h.ok('secrets/set', { org_id: w.orgId, name: 'ORG_ONLY', value: ORG_VALUE });
    // Prints its secrets every way it can think of; outputs only their hashes.
    const leaky = agents.write(
      'leaky',
      `const fs = require('fs');
const crypto = require('crypto');
const k = process.env.API_KEY, o = process.env.ORG_ONLY;
console.log('plain ' + k + ' and ' + o);
console.error('stderr ' + k);
console.log('b64 ' + Buffer.from(k).toString('base64'));
console.log('b64 inside ' + Buffer.from('Bearer:' + k + ':end').toString('base64'));
console.log('url https://x.test/?key=' + encodeURIComponent(k));
console.log(JSON.stringify({ env: { API_KEY: k } }));
const half = Math.floor(k.length / 2);
process.stdout.write('split ' + k.slice(0, half));
setTimeout(() => {
  process.stdout.write(k.slice(half) + ' done\\n');
  const h = (s) => crypto.createHash('sha256').update(s || '').digest('hex');
  fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ api: h(k), org: h(o) }));
}, 150);`,
    );
    const other = agents.write(
      'other',
      `require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({
  names: Object.keys(process.env).filter((n) => n === 'API_KEY' || n === 'ORG_ONLY'),
}));`,
    );
    await registerAgent(h, w.orgId, 'leaky', leaky, { secrets: ['API_KEY', 'ORG_ONLY'] });
    await registerAgent(h, w.orgId, 'other', other);
    await registerTeam(h, w.orgId, 'with-secrets', [
      { name: 'use', agent: 'leaky' },
      { name: 'after', agent: 'other' },
    ]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  it('gives the phase its secrets (realm over organization), no other phase, and masks every form in the logs', async () => {
    const created = await h.ok('runs/new', { realm_id: w.realmId, team: 'with-secrets' });
    const done = await waitForRun(h, created.data.run_id, ended);
    assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
    assert.deepEqual(done.outputs.use, { api: sha(REALM_VALUE), org: sha(ORG_VALUE) });
    assert.deepEqual(done.outputs.after.names, []);

    const logs = await h.ok('runs/logs', { run_id: created.data.run_id });
    const texts: string[] = logs.data.map((l: { text: string }) => l.text);
    const all = JSON.stringify(logs);
    for (const v of [REALM_VALUE, ORG_VALUE]) {
      for (const form of [
        v,
        Buffer.from(v).toString('base64'),
        encodeURIComponent(v),
        JSON.stringify(v).slice(1, -1),
      ]) {
        assert.ok(!all.includes(form), `the logs hold ${form}`);
      }
    }
    assert.ok(!all.includes(Buffer.from(`Bearer:${REALM_VALUE}:end`).toString('base64')));
    assert.ok(texts.includes('plain *** and ***'), JSON.stringify(texts));
    assert.ok(texts.includes('stderr ***'));
    assert.ok(texts.includes('split *** done'), 'a value written in two pieces is masked');
    assert.ok(texts.includes('url https://x.test/?key=***'));
    assert.ok(texts.includes('b64 ***'));
  });

  it('never answers a value: agents/get, secrets/list, runs/get_by_id', async () => {
    const agent = await h.ok('agents/list', { org_id: w.orgId });
    const leaky = agent.data.find((a: { name: string }) => a.name === 'leaky');
    const got = await h.ok('agents/get', { id: leaky.id });
    assert.deepEqual(got.data.manifest.secrets, ['API_KEY', 'ORG_ONLY']);
    const replies = [
      got,
      await h.ok('secrets/list', { realm_id: w.realmId }),
      await h.ok('secrets/list', { org_id: w.orgId }),
      await h.ok('runs/list', { realm_id: w.realmId }),
    ];
    for (const r of replies) {
      const text = JSON.stringify(r);
      for (const v of [REALM_VALUE, ORG_VALUE, SHADOWED]) assert.ok(!text.includes(v));
    }
  });

  it('keeps no value in the daemon database, nor in clear in the hub database (outbox included)', async () => {
    const files = [path.join(home.dir, 'daemon.db'), path.join(home.dir, 'daemon.db-wal')];
    if (TEST_DB === 'sqlite') files.push(h.database.url, `${h.database.url}-wal`);
    else {
      const bodies = await h.running.hub.db.selectFrom('command_outbox').select('body').execute();
      for (const b of bodies) assert.ok(!b.body.includes(REALM_VALUE) && !b.body.includes(ORG_VALUE));
      assert.ok(bodies.some((b) => b.body.includes('secrets_sealed')));
    }
    for (const f of files) {
      if (!existsSync(f)) continue;
      const bytes = readFileSync(f);
      for (const v of [REALM_VALUE, ORG_VALUE, SHADOWED])
        assert.equal(bytes.includes(v), false, `${f}: ${v}`);
    }
  });

  it('fails the run before the agent starts when a secret is missing, naming it', async () => {
    const marker = path.join(agents.dir, 'started');
    const needy = agents.write('needy', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x');`);
    await registerAgent(h, w.orgId, 'needy', needy, { secrets: ['API_KEY', 'NOT_SET_ANYWHERE'] });
    await registerTeam(h, w.orgId, 'needy-team', [{ name: 'go', agent: 'needy' }]);
    const created = await h.ok('runs/new', { realm_id: w.realmId, team: 'needy-team' });
    const done = await waitForRun(h, created.data.run_id, ended);
    assert.equal(done.state, 'failed');
    assert.match(done.error, /missing secret NOT_SET_ANYWHERE/);
    assert.ok(!done.error.includes('API_KEY'), done.error);
    assert.equal(existsSync(marker), false, 'the agent never started');
    assert.ok(!done.history.some((e: { type: string }) => e.type === 'phase.started'));
  });

  it('refuses a manifest with a bad secret name, a repeated one, or one also in env', async () => {
    for (const extra of [
      { secrets: ['lower'] },
      { secrets: ['A', 'A'] },
      { secrets: ['SVC_TOKEN'] },
      { secrets: 'API_KEY' },
      { secrets: ['API_KEY'], env: { API_KEY: 'x' } },
    ]) {
      const r = await h.call('agents/register', {
        org_id: w.orgId,
        manifest: { name: 'bad-secrets', version: '1.0.0', command: ['true'], ...extra },
      });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.body.code, 'bad_request');
    }
  });
});
