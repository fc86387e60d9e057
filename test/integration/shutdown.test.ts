import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { mintToken } from '../../src/shared/tokens.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { agentDir } from '../helpers/runs.js';

/**
 * A hub or daemon given SIGTERM finishes in-flight work up to its grace period and exits, whatever
 * is open: daemons connected, runs in flight, deliveries pending, a client holding a request open.
 * A second signal exits at once.
 */

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'svc-stop-'));
  dirs.push(d);
  return d;
};
const servers: (http.Server | net.Server)[] = [];
const sockets: net.Socket[] = [];
after(async () => {
  for (const s of sockets) s.destroy();
  for (const s of servers) {
    if ('closeAllConnections' in s) s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  await killChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The first JSON log line with this `msg`. */
function logLine(p: LongRunning, msg: string): Record<string, unknown> {
  return p
    .stdout()
    .split('\n')
    .map((l) => (l.startsWith('{') ? (JSON.parse(l) as Record<string, unknown>) : null))
    .find((l) => l?.msg === msg)!;
}

async function startHub(grace: number): Promise<{ hub: LongRunning; url: string; admin: string }> {
  const admin = mintToken('user');
  const hub = startCli(['hub'], {
    env: {
      SVC_HOME: tempDir(),
      SVC_HUB_PORT: '0',
      SVC_LOG_LEVEL: 'info',
      SVC_ADMIN_TOKEN: admin,
      SVC_SHUTDOWN_GRACE_MS: String(grace),
    },
  });
  await hub.waitFor(/"msg":"hub ready"/);
  return { hub, url: logLine(hub, 'hub ready').url as string, admin };
}

async function call(url: string, op: string, body: unknown, token: string) {
  const r = await fetch(`${url}/v1/${op}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const json = (await r.json()) as { ok: boolean; data: Record<string, unknown> };
  assert.ok(json.ok, `${op}: ${JSON.stringify(json)}`);
  return json.data;
}

/**
 * A client that sends the head of a request and part of its body, then holds the connection. It asks
 * for `100 Continue`, so once that arrives the server has the request in flight.
 */
async function holdRequest(url: string, route: string): Promise<void> {
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const continued = new Promise<void>((resolve) => {
    let seen = '';
    socket.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes('100 Continue')) resolve();
    });
  });
  socket.write(
    `POST ${route} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`,
  );
  await continued;
  socket.write('{"ha');
}

/** A webhook receiver that accepts requests and never answers them. */
async function silentReceiver(): Promise<{ url: string; seen: Promise<void> }> {
  let saw: () => void = () => {};
  const seen = new Promise<void>((resolve) => {
    saw = resolve;
  });
  const server = http.createServer(() => saw());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`, seen };
}

describe('stopping a hub and a daemon', () => {
  it('with a daemon connected, a run in flight, a delivery pending and a client holding a request, both exit on SIGTERM', async () => {
    const { hub, url, admin } = await startHub(1_000);
    const org = await call(url, 'orgs/new', { slug: 'stops', owner: { email: 'o@stops.test' } }, admin);
    const orgId = (org.org as { id: string }).id;
    const realms = (await fetch(`${url}/v1/realms/list`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ org_id: orgId }),
    }).then((r) => r.json())) as { data: { id: string }[] };
    const realmId = realms.data[0]!.id;
    const daemonToken = await call(
      url,
      'realms/create_daemon_token',
      { realm_id: realmId, name: 'd' },
      admin,
    );

    // A delivery that never finishes: a rule on run.started to a receiver that never answers.
    await call(
      url,
      'settings/set',
      { key: 'notifications.allow_private_destinations', value: 'true' },
      admin,
    );
    const receiver = await silentReceiver();
    const channel = await call(
      url,
      'notification_channels/new',
      { realm_id: realmId, name: 'silent', destinations: [{ type: 'webhook', webhook_url: receiver.url }] },
      admin,
    );
    await call(
      url,
      'realms/new_notification_rule',
      { realm_id: realmId, event: 'run.started', channel_ids: [channel.id] },
      admin,
    );

    const agents = agentDir();
    dirs.push(agents.dir);
    const sleeper = agents.write('sleeper', `console.log('sleeping'); setInterval(() => {}, 1000);`);
    await call(
      url,
      'agents/register',
      {
        org_id: orgId,
        manifest: { name: 'sleeper', version: '1.0.0', command: [process.execPath, sleeper] },
      },
      admin,
    );
    const team = await call(
      url,
      'teams/register',
      {
        org_id: orgId,
        definition: { name: 'sleepy', version: '1.0.0', phases: [{ name: 's', agent: 'sleeper' }] },
      },
      admin,
    );

    const daemon = startCli(['daemon'], {
      env: {
        SVC_DAEMON_HOME: tempDir(),
        SVC_DAEMON_PORT: '0',
        SVC_LOG_LEVEL: 'info',
        SVC_HUB_URL: url,
        SVC_REALM_TOKEN: daemonToken.token as string,
        SVC_SHUTDOWN_GRACE_MS: '1000',
      },
    });
    const listening = await daemon.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","hub":\[/);
    await daemon.waitFor(/"msg":"connected to the hub"/);
    // A run goes only to a daemon with its team installed.
    await call(url, 'teams/install', { team_version_id: team.id, daemon_id: daemonToken.daemon_id }, admin);
    const run = await call(url, 'runs/new', { realm_id: realmId, team: 'sleepy' }, admin);
    for (const deadline = Date.now() + 30_000; ; ) {
      const logs = await call(url, 'runs/logs', { run_id: run.run_id }, admin);
      if ((logs as unknown as { text: string }[]).some((l) => l.text === 'sleeping')) break;
      assert.ok(Date.now() < deadline, `the agent never started: ${JSON.stringify(logs)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await receiver.seen;
    await holdRequest(url, '/v1/auth/whoami');
    await holdRequest(listening[1]!, '/v1/teams/list');

    assert.equal(await hub.stop('SIGTERM'), 0, hub.stderr());
    assert.match(hub.stdout(), /"msg":"hub stopped"/);
    assert.equal(await daemon.stop('SIGTERM'), 0, daemon.stderr());
    assert.match(daemon.stdout(), /"msg":"daemon stopped"/);
  });

  it('a second signal stops at once while the first is still waiting for in-flight work', async () => {
    const { hub, url } = await startHub(600_000);
    await holdRequest(url, '/v1/auth/whoami');
    hub.child.kill('SIGTERM');
    await hub.waitFor(/"msg":"hub stopping"/);
    assert.equal(await hub.stop('SIGTERM'), 143);
    assert.doesNotMatch(hub.stdout(), /"msg":"hub stopped"/);
  });
});
