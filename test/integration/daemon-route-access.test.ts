import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { ROUTE_ACCESS } from '../../src/daemon/route-access.js';
import { signDispatch } from '../../src/hub/daemons/dispatch.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, ended, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';
import { createNetns, type Netns } from './daemon-netns.js';

// Which caller on another host may use which daemon route, for real: the daemon listens on the host
// end of a veth pair, connected to a hub, and curl calls it from inside a network namespace.
const netns = await createNetns();
const skip = 'skip' in netns ? netns.skip : false;
after(async () => {
  if (!('skip' in netns)) await netns.cleanup();
});

describe('daemon routes and who may call them from another host', { skip }, () => {
  const ns = netns as Netns;
  const home = daemonHome();
  const agents = agentDir();
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-scratch-'));
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  let base: string;
  /** Bearer headers of each remote caller, by name. */
  const callers: Record<string, Record<string, string>> = {};
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { host: ns.hostAddr, hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { killGraceMs: 300, logFlushMs: 50 },
    });
    await whenConnected(d);
    base = `${d.url}/v1`;
    const issued = async (token: string) =>
      (await h.ok('daemons/issue_dispatch_token', { daemon_id: w.daemonId }, token)).data.token as string;
    const hubToken = await signDispatch(h.running.hub.tunnel.keys, w.daemonId, Date.now(), 60_000);
    Object.assign(callers, {
      member: bearer(w.tokens.realm_member!),
      operator: bearer(w.tokens.realm_operator!),
      admin: bearer(w.tokens.realm_admin!),
      'operator (dispatch token)': bearer(await issued(w.tokens.realm_operator!)),
      'admin (dispatch token)': bearer(await issued(w.tokens.realm_admin!)),
      hub: bearer(hubToken.token),
    });
    const sleeper = agents.write(
      'sleeper',
      `process.on('SIGTERM', () => process.exit(143));
console.log('sleeping');
setInterval(() => {}, 1000);`,
    );
    await registerAgent(h, w.orgId, 'sleeper', sleeper);
    await registerTeam(h, w.orgId, 'sleepy', [{ name: 'sleep', agent: 'sleeper' }]);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** Remote callers the table lets through, per route (everything else answers FORBIDDEN). */
  const allowed: Record<string, string[]> = {
    offer_job: ['member', 'operator', 'admin', 'operator (dispatch token)', 'admin (dispatch token)', 'hub'],
    'teams/list': [
      'member',
      'operator',
      'admin',
      'operator (dispatch token)',
      'admin (dispatch token)',
      'hub',
    ],
    'workspaces/list': [
      'member',
      'operator',
      'admin',
      'operator (dispatch token)',
      'admin (dispatch token)',
      'hub',
    ],
    'runs/execute': ['hub'],
    'runs/child_ended': ['hub'],
    'teams/install': ['hub'],
    'hug/deliver': ['hub'],
    'runs/cancel': ['operator', 'admin', 'operator (dispatch token)', 'admin (dispatch token)', 'hub'],
    'teams/uninstall': ['operator', 'admin', 'operator (dispatch token)', 'admin (dispatch token)', 'hub'],
    'workspaces/register': ['admin', 'admin (dispatch token)', 'hub'],
    'workspaces/unregister': ['admin', 'admin (dispatch token)', 'hub'],
    'workspaces/assign_teams': ['admin', 'admin (dispatch token)', 'hub'],
    'hug/request': [],
    'hug/poll_verdict': [],
    'tokens/create': [],
    'artifacts/upload': [],
  };

  it('covers every route of the table', () => {
    assert.deepEqual(Object.keys(allowed).sort(), Object.keys(ROUTE_ACCESS).sort());
  });

  for (const [route, who] of Object.entries(allowed)) {
    it(`${route}: ${who.length ? who.join(', ') : 'no caller on another host'}`, async () => {
      for (const [name, headers] of Object.entries(callers)) {
        // An empty body: a caller that may use the route gets past the table (to the body check).
        const r = await ns.post(`${base}/${route}`, {}, headers);
        if (who.includes(name)) {
          assert.notEqual(r.body.error?.code, 'FORBIDDEN', `${name} → ${route}: ${JSON.stringify(r.body)}`);
        } else {
          assert.equal(r.status, 403, `${name} → ${route}: ${JSON.stringify(r.body)}`);
          assert.equal(r.body.error.code, 'FORBIDDEN', `${name} → ${route}`);
        }
      }
    });
  }

  it('gives agents a loopback URL that the guard lets in as local callers', async () => {
    assert.match(d.agentUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    const r = await fetch(`${d.agentUrl}/v1/hug/poll_verdict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ review_id: 'from-an-agent' }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { ok: true, data: { entries: [] } });
  });

  it('a member cannot cancel a run through the daemon; an operator can', async () => {
    const runId = (await h.ok('runs/new', { realm_id: w.realmId, team: 'sleepy' }, w.tokens.realm_member))
      .data.run_id as string;
    const running = await waitForRun(h, runId, (r) => r.state === 'running' && r.current_pid !== null);
    const body = { run_id: runId, lease_epoch: running.lease_epoch ?? 1, reason: 'from the network' };
    const refused = await ns.post(`${base}/runs/cancel`, body, callers.member);
    assert.equal(refused.body.error.code, 'FORBIDDEN');
    assert.equal((await h.ok('runs/get_by_id', { run_id: runId })).data.state, 'running');
    const accepted = await ns.post(`${base}/runs/cancel`, body, callers.operator);
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    assert.equal((await waitForRun(h, runId, ended)).state, 'cancelled');
  });

  it('a member can neither forge a review verdict nor drain a review queue', async () => {
    const verdict = { type: 'verdict', role: 'reviewer', payload: { action: 'approve' } };
    const forged = await ns.post(
      `${base}/hug/deliver`,
      { review_id: 'rv-1', message: verdict },
      callers.member,
    );
    assert.equal(forged.body.error.code, 'FORBIDDEN');
    const empty = await d.dispatch('hug/poll_verdict', { review_id: 'rv-1' });
    assert.deepEqual(empty.reply, { ok: true, data: { entries: [] } });

    await d.dispatch('hug/deliver', { review_id: 'rv-2', message: verdict });
    const drained = await ns.post(`${base}/hug/poll_verdict`, { review_id: 'rv-2' }, callers.admin);
    assert.equal(drained.body.error.code, 'FORBIDDEN');
    const kept = await d.dispatch('hug/poll_verdict', { review_id: 'rv-2' });
    assert.equal((kept.reply as { data: { entries: unknown[] } }).data.entries.length, 1);
  });

  it('an admin cannot make the daemon run a command line of their own', async () => {
    const marker = path.join(scratch, 'pwned');
    const body = {
      run_id: 'r-forged',
      lease_epoch: 1,
      lease_ms: 30_000,
      team: { phases: [{ name: 'x', agent_id: 'a' }] },
      agents: {
        a: {
          name: 'x',
          version: '1',
          agent_type: 'exec',
          command: ['/bin/sh', '-c', `touch ${marker}`],
          env: {},
          timeout_ms: 5_000,
        },
      },
      inputs: {},
    };
    for (const who of ['admin', 'admin (dispatch token)']) {
      const r = await ns.post(`${base}/runs/execute`, body, callers[who]);
      assert.equal(r.body.error.code, 'FORBIDDEN', who);
    }
    assert.deepEqual(d.runner?.active() ?? [], []);
    assert.equal(existsSync(marker), false);
  });
});
