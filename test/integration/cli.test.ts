import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { isLiveLocalToken } from '../../src/daemon/tokens/local-tokens.repo.js';
import { killChildren, runCli, startCli } from '../helpers/cli.js';
import { post, startTestHub, type TestHub } from '../helpers/hub.js';
import { addOrgUser, createOrgWithOwner } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/** The real `svc` executable as a child process, against a real hub over HTTP. */
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'svc-cli-'));
  dirs.push(d);
  return d;
};

/** A port nothing listens on. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

after(async () => {
  const left = await killChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  assert.equal(left, 0, 'a test left an svc process running');
});

describe('svc client commands', () => {
  let h: TestHub;
  let org: Awaited<ReturnType<typeof createOrgWithOwner>>;
  let member: { id: string; handle: string; token: string };
  let admin: Record<string, string>;
  const slug = 'cli-org';

  before(async () => {
    h = await startTestHub();
    org = await createOrgWithOwner(h, slug);
    member = await addOrgUser(h, org.orgId, 'member@cli-org.test', 'member');
    // An empty SVC_CONFIG_DIR: no profile from the developer's machine is ever read.
    admin = { SVC_HUB_URL: h.url, SVC_TOKEN: h.adminToken, SVC_CONFIG_DIR: tempDir() };
  });
  after(async () => h?.close());

  test('orgs list prints an aligned table', async () => {
    const r = await runCli(['orgs', 'list'], { env: admin });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+SLUG\s+NAME\s+STATUS\s+OWNER\s+CREATED$/);
    const row = lines.find((l) => l.includes(` ${slug} `));
    assert.ok(row, r.stdout);
    assert.match(
      row,
      new RegExp(`^${org.orgId}\\s+${slug}\\s+${slug}\\s+active\\s+owner@${slug}\\.test\\s+\\d{4}-`),
    );
    // Columns line up: SLUG starts at the same offset in the header and the row.
    assert.equal(lines[0]!.indexOf('SLUG'), row.indexOf(slug));
  });

  test('--json prints the raw reply, before or after the command', async () => {
    for (const args of [
      ['--json', 'orgs', 'list'],
      ['orgs', 'list', '--json'],
    ]) {
      const r = await runCli(args, { env: admin });
      assert.equal(r.code, 0, r.stderr);
      const body = JSON.parse(r.stdout);
      assert.equal(body.ok, true);
      assert.ok(body.data.some((o: { slug: string }) => o.slug === slug));
      assert.ok('next_cursor' in body);
    }
  });

  test('realms are found by org slug and realm name', async () => {
    const list = await runCli(['realms', 'list', '--org', slug], { env: admin });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`^${org.defaultRealmId}\\s+default\\s`, 'm'));

    const created = await runCli(['realms', 'new', 'staging', '--org', slug], { env: admin });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /Created realm staging/);

    const added = await runCli(
      ['realms', 'add-member', 'staging', member.handle, '--org', slug, '--role', 'operator'],
      { env: admin },
    );
    assert.equal(added.code, 0, added.stderr);
    const members = await runCli(['realms', 'members', 'staging', '--org', slug], { env: admin });
    assert.equal(members.code, 0, members.stderr);
    assert.match(members.stdout, new RegExp(`^user\\s+${member.handle}\\s+${member.id}\\s+operator\\s`, 'm'));

    const get = await runCli(['--json', 'realms', 'get', 'staging', '--org', slug], { env: admin });
    assert.equal(JSON.parse(get.stdout).data.name, 'staging');
  });

  test('an API error is one line on stderr with exit code 1', async () => {
    const asMember = { ...admin, SVC_TOKEN: member.token };
    const r = await runCli(['realms', 'new', 'nope', '--org', org.orgId], { env: asMember });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'error: forbidden: requires realms.manage in this organization\n');

    const missing = await runCli(['orgs', 'get', 'no-such-org'], { env: admin });
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'error: not_found: organization "no-such-org" not found\n');

    const conflict = await runCli(['orgs', 'new', slug, '--owner-email', 'x@y.test'], { env: admin });
    assert.equal(conflict.code, 1);
    assert.match(conflict.stderr, /^error: conflict: an organization with slug "cli-org" exists\n$/);

    const badToken = await runCli(['whoami'], { env: { ...admin, SVC_TOKEN: 'svc_tok_nonsense' } });
    assert.equal(badToken.code, 1);
    assert.match(badToken.stderr, /^error: unauthorized: /);
    assert.doesNotMatch(badToken.stderr, /\n\s+at /);
  });

  test('a hub that does not answer is an error, not a stack trace', async () => {
    const port = await freePort();
    const r = await runCli(['whoami'], { env: { ...admin, SVC_HUB_URL: `http://127.0.0.1:${port}` } });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `error: cannot reach the hub at http://127.0.0.1:${port} (ECONNREFUSED)\n`);
  });

  test('usage errors exit 2', async () => {
    const cases: [string[], RegExp][] = [
      [['orgs', 'get'], /missing required argument 'org'/],
      [['orgs', 'new', 'x'], /required option '--owner-email <email>' not specified/],
      [['orgs', 'invite', slug, 'a@b.test', '--role', 'boss'], /^error: role must be admin or member/],
      [['orgs', 'list', '--limit', 'many'], /must be a positive integer/],
      [['no-such-command'], /unknown command 'no-such-command'/],
      [['call', 'orgs/list', '{not json'], /^error: the body is not valid JSON/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, { env: admin });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
    const noHub = await runCli(['orgs', 'list'], { env: { SVC_CONFIG_DIR: tempDir() } });
    assert.equal(noHub.code, 2);
    assert.match(noHub.stderr, /^error: no hub to talk to/);
  });

  test('--help exits 0', async () => {
    const r = await runCli(['--help'], { env: {} });
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Servers:\n\s+daemon\s.*\n\s+dev\s.*\n\s+hub\s/);
    for (const line of r.stdout.split('\n')) assert.ok(line.length <= 80, line);
    assert.match(r.stdout, /orgs\s+Organizations/);
  });

  test('svc call prints any operation raw', async () => {
    const r = await runCli(['call', 'realms/list', JSON.stringify({ org_id: org.orgId })], { env: admin });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).data[0].name, 'default');
    const stdin = await runCli(['call', '/v1/auth/whoami', '-'], { env: admin, input: '{}\n' });
    assert.equal(JSON.parse(stdin.stdout).data.user.handle, 'admin');
  });

  test('svc login saves a profile (0600) that later commands use', async () => {
    const cfg = tempDir();
    const login = await runCli(['login', '--hub', h.url, '--token', org.owner.token], {
      env: { SVC_CONFIG_DIR: cfg },
    });
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stdout, new RegExp(`as ${org.owner.handle} <owner@${slug}\\.test>`));
    assert.equal(statSync(path.join(cfg, 'config.json')).mode & 0o777, 0o600);

    const who = await runCli(['whoami'], { env: { SVC_CONFIG_DIR: cfg } });
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, new RegExp(`^user:\\s+${org.owner.handle}$`, 'm'));
    // SVC_TOKEN wins over the profile.
    const env = await runCli(['--json', 'whoami'], { env: { SVC_CONFIG_DIR: cfg, SVC_TOKEN: h.adminToken } });
    assert.equal(JSON.parse(env.stdout).data.user.handle, 'admin');

    const out = await runCli(['logout'], { env: { SVC_CONFIG_DIR: cfg } });
    assert.equal(out.code, 0, out.stderr);
    const after = await runCli(['whoami'], { env: { SVC_CONFIG_DIR: cfg } });
    assert.equal(after.code, 2);
  });

  test('login with e-mail and password; logout ends that session', async () => {
    const cfg = tempDir();
    const inv = await h.ok('orgs/invite_member', {
      org_id: org.orgId,
      email: 'pw@cli-org.test',
      role: 'member',
    });
    const accept = await runCli(
      ['invites', 'accept', inv.data.code, '--password-stdin', '--handle', 'pw-user'],
      {
        env: { SVC_HUB_URL: h.url, SVC_CONFIG_DIR: cfg },
        input: 'a long password\n',
      },
    );
    assert.equal(accept.code, 0, accept.stderr);
    assert.match(accept.stdout, /^user:\s+pw-user$/m);

    const login = await runCli(['login', '--hub', h.url, '--email', 'pw@cli-org.test', '--password-stdin'], {
      env: { SVC_CONFIG_DIR: cfg },
      input: 'a long password\n',
    });
    assert.equal(login.code, 0, login.stderr);
    const config = JSON.parse(readFileSync(path.join(cfg, 'config.json'), 'utf8'));
    const session = config.profiles.default.token as string;
    assert.equal(config.profiles.default.token_kind, 'session');
    assert.equal((await post(`${h.url}/v1/auth/whoami`, {}, session)).status, 200);
    await runCli(['logout'], { env: { SVC_CONFIG_DIR: cfg } });
    assert.equal((await post(`${h.url}/v1/auth/whoami`, {}, session)).status, 401);

    const wrong = await runCli(['login', '--hub', h.url, '--email', 'pw@cli-org.test', '--password-stdin'], {
      env: { SVC_CONFIG_DIR: cfg },
      input: 'not it\n',
    });
    assert.equal(wrong.code, 1);
    assert.equal(wrong.stderr, 'error: unauthorized: invalid e-mail or password\n');
  });

  test('invites accept: an existing account accepts signed in, without a password', async () => {
    const cfg = tempDir();
    const other = await h.ok('orgs/new', {
      slug: 'cli-elsewhere',
      owner: { email: 'boss@cli-elsewhere.test' },
    });
    const invite = async () =>
      (
        await h.ok('orgs/invite_member', {
          org_id: other.data.org.id,
          email: 'member@cli-org.test',
          role: 'member',
        })
      ).data.code as string;
    const anonymous = await runCli(['invites', 'accept', await invite()], {
      env: { SVC_HUB_URL: h.url, SVC_CONFIG_DIR: cfg },
    });
    assert.equal(anonymous.code, 1);
    assert.match(
      anonymous.stderr,
      /^error: unauthorized: member@cli-org\.test already has an account: sign in/,
    );
    const withHub = await runCli(['invites', 'accept', await invite(), '--hub', h.url], {
      env: { SVC_TOKEN: member.token, SVC_CONFIG_DIR: cfg },
    });
    assert.equal(withHub.code, 2);
    assert.match(withHub.stderr, /accepted as the signed-in account: drop --hub/);
    const accepted = await runCli(['invites', 'accept', await invite()], {
      env: { SVC_HUB_URL: h.url, SVC_TOKEN: member.token, SVC_CONFIG_DIR: cfg },
    });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, new RegExp(`^user:\\s+${member.handle}$`, 'm'));
  });

  test('tokens create, list and revoke', async () => {
    const created = await runCli(['--json', 'tokens', 'create', 'ci', '--expires-in-days', '7'], {
      env: admin,
    });
    assert.equal(created.code, 0, created.stderr);
    const { id, token } = JSON.parse(created.stdout).data;
    const list = await runCli(['tokens', 'list'], { env: admin });
    assert.match(list.stdout, new RegExp(`^${id}\\s+ci\\s+personal\\s`, 'm'));
    const revoked = await runCli(['tokens', 'revoke', id], { env: admin });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await post(`${h.url}/v1/auth/whoami`, {}, token)).status, 401);
  });

  test('realms daemon-token, then daemons list/get/remove', async () => {
    const r = await runCli(['realms', 'daemon-token', 'default', 'laptop', '--org', slug], { env: admin });
    assert.equal(r.code, 0, r.stderr);
    const token = /^token:\s+(svc_dt_\S+)$/m.exec(r.stdout)?.[1];
    const daemonId = /^daemon:\s+(\S+)$/m.exec(r.stdout)?.[1];
    assert.ok(token && daemonId, r.stdout);
    assert.match(r.stdout, /SVC_REALM_TOKEN=svc_dt_\S+ svc daemon/);

    const list = await runCli(['daemons', 'list', '--realm', 'default', '--org', slug], { env: admin });
    assert.match(list.stdout, new RegExp(`^${daemonId}\\s+laptop\\s+offline\\s`, 'm'));
    const get = await runCli(['daemons', 'get', daemonId], { env: admin });
    assert.match(get.stdout, /^name:\s+laptop$/m);
    const byName = await runCli(['daemons', 'get', 'laptop', '--realm', 'default', '--org', slug], {
      env: admin,
    });
    assert.match(byName.stdout, new RegExp(`^id:\\s+${daemonId}$`, 'm'));
    const removed = await runCli(['daemons', 'remove', daemonId], { env: admin });
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((await post(`${h.url}/v1/auth/whoami`, {}, token)).status, 401);
  });

  test('groups by name: new, add-member, list, realm membership, remove', async () => {
    const run = (...args: string[]) => runCli([...args, '--org', slug], { env: admin });
    const created = await run('groups', 'new', 'reviewers');
    assert.equal(created.code, 0, created.stderr);
    assert.equal((await run('groups', 'add-member', 'reviewers', member.handle)).code, 0);
    const list = await run('groups', 'list');
    assert.match(list.stdout, new RegExp(`\\sreviewers\\s+${member.handle}\\s`));
    const added = await run(
      'realms',
      'add-member',
      'default',
      'reviewers',
      '--type',
      'group',
      '--role',
      'operator',
    );
    assert.equal(added.code, 0, added.stderr);
    const members = await run('realms', 'members', 'default');
    assert.match(members.stdout, /^group\s+reviewers\s+\S+\s+operator\s/m);
    assert.equal((await run('groups', 'remove-member', 'reviewers', member.handle)).code, 0);
    assert.equal((await run('groups', 'remove', 'reviewers')).code, 0);
    const gone = await run('groups', 'remove', 'reviewers');
    assert.equal(gone.code, 1);
    assert.equal(gone.stderr, 'error: not_found: group "reviewers" not found\n');
  });

  test('settings set, get, list, remove; mesh adapters', async () => {
    assert.equal((await runCli(['settings', 'set', 'runs.lease_ms', '45000'], { env: admin })).code, 0);
    const get = await runCli(['settings', 'get', 'runs.lease_ms'], { env: admin });
    assert.match(get.stdout, /^value:\s+45000$/m);
    const list = await runCli(['settings', 'list'], { env: admin });
    assert.match(list.stdout, /^runs\.lease_ms\s+45000\s/m);
    const removed = await runCli(['settings', 'remove', 'runs.lease_ms'], { env: admin });
    assert.equal(removed.stdout, 'Removed runs.lease_ms.\n');
    const unset = await runCli(['--json', 'settings', 'get', 'runs.lease_ms'], { env: admin });
    assert.deepEqual(JSON.parse(unset.stdout), { ok: true, setting: null });

    const mesh = await runCli(['mesh', 'adapters'], { env: admin });
    assert.equal(mesh.code, 0, mesh.stderr);
    for (const id of ['tailscale', 'headscale', 'netbird', 'zerotier'])
      assert.match(mesh.stdout, new RegExp(`^${id}\\s`, 'm'));
    const asMember = await runCli(['mesh', 'adapters'], { env: { ...admin, SVC_TOKEN: member.token } });
    assert.match(asMember.stdout, /No mesh adapters are enabled/);
  });

  test('orgs new, invite and members', async () => {
    const r = await runCli(['orgs', 'new', 'cli-two', '--owner-email', 'boss@cli-two.test'], { env: admin });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Organization cli-two created .* status waiting_for_owner/);
    assert.match(r.stdout, /svc invites accept svc_inv_\S+ --password-stdin/);
    const inv = await runCli(['orgs', 'invite', 'cli-two', 'new@cli-two.test', '--role', 'admin'], {
      env: admin,
    });
    assert.equal(inv.code, 0, inv.stderr);
    // Invited people are members once they accept.
    assert.equal((await runCli(['orgs', 'members', 'cli-two'], { env: admin })).stdout, 'No members.\n');
    const members = await runCli(['orgs', 'members', slug], { env: admin });
    assert.match(members.stdout, /^ID\s+HANDLE\s+EMAIL\s+ROLE\s+STATUS$/m);
    assert.match(
      members.stdout,
      new RegExp(`^${org.owner.id}\\s+${org.owner.handle}\\s+owner@${slug}\\.test\\s+owner\\s+active$`, 'm'),
    );
  });
});

describe('svc agents, teams and workspaces', () => {
  let h: TestHub;
  let env: Record<string, string>;
  let daemon: RunningDaemon;
  let daemonId: string;
  const home = daemonHome();
  const slug = 'cat-org';
  before(async () => {
    h = await startTestHub();
    const org = await createOrgWithOwner(h, slug);
    const dt = await h.ok('realms/create_daemon_token', { realm_id: org.defaultRealmId, name: 'box' });
    daemonId = dt.data.daemon_id;
    daemon = await startTestDaemon(home.dir, { config: { hubUrls: [h.url], realmToken: dt.data.token } });
    await whenConnected(daemon);
    env = { SVC_HUB_URL: h.url, SVC_TOKEN: org.owner.token, SVC_CONFIG_DIR: tempDir() };
  });
  after(async () => {
    await daemon?.close();
    await h?.close();
    home.cleanup();
  });

  test('register from files (--force), list, get, install, workspaces, remove', async () => {
    const cwd = tempDir();
    writeFileSync(
      path.join(cwd, 'agent.yaml'),
      'name: greeter\nversion: 1.0.0\ndescription: Says hi\ncommand: ["node", "hi.js"]\n',
    );
    writeFileSync(
      path.join(cwd, 'team.yaml'),
      'name: greet-team\nversion: 1.0.0\nphases:\n  - name: one\n    agent: greeter\n  - name: two\n    agent: greeter@1.0.0\n',
    );
    const run = (...args: string[]) => runCli(args, { env, cwd });
    const reg = await run('agents', 'register', './agent.yaml');
    assert.equal(reg.code, 0, reg.stderr);
    assert.match(reg.stdout, /^Registered agent greeter@1\.0\.0 \(\S+\)\.$/m);
    const dup = await run('agents', 'register', './agent.yaml');
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /^error: conflict: agent greeter@1\.0\.0 is already registered; use force/);
    const forced = await run('agents', 'register', './agent.yaml', '--force', '--org', slug);
    assert.equal(forced.code, 0, forced.stderr);
    const missing = await run('agents', 'register', './nope.yaml');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: cannot read \.\/nope\.yaml: ENOENT/);

    const list = await run('agents', 'list');
    assert.match(list.stdout, /^ID\s+NAME\s+VERSION\s+TYPE\s+DESCRIPTION\s+UPDATED$/m);
    assert.match(list.stdout, /\sgreeter\s+1\.0\.0\s+exec\s+Says hi\s/);
    const get = await run('agents', 'get', 'greeter');
    assert.match(get.stdout, /^command:\s+node hi\.js$/m);

    const team = await run('teams', 'register', 'team.yaml');
    assert.equal(team.code, 0, team.stderr);
    assert.match(team.stdout, /^Registered team greet-team@1\.0\.0/m);
    assert.match((await run('teams', 'list')).stdout, /\sgreet-team\s+1\.0\.0\s+one, two\s/);
    assert.match(
      (await run('teams', 'get', 'greet-team@1.0.0')).stdout,
      /^phase 2:\s+two: agent greeter@1\.0\.0$/m,
    );

    const install = await run('teams', 'install', 'greet-team', '--daemon', 'box');
    assert.equal(install.code, 0, install.stderr);
    assert.equal(install.stdout, 'Installed greet-team@1.0.0 on daemon box.\n');
    assert.match((await run('teams', 'installs', '--daemon', daemonId)).stdout, /\sinstalled\s/);

    const dir = path.join(cwd, 'ws');
    mkdirSync(dir);
    const ws = await run('workspaces', 'register', '--daemon', 'box', './ws', '--name', 'main');
    assert.equal(ws.code, 0, ws.stderr);
    const wsId = /^Registered workspace main \((\S+)\) at (.+)\.$/m.exec(ws.stdout)?.[1];
    assert.ok(wsId, ws.stdout);
    const bad = await run('workspaces', 'register', '--daemon', 'box', './nope');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: bad_request: the daemon refused the workspace: .*no such directory/);
    assert.match((await run('workspaces', 'list')).stdout, new RegExp(`^${wsId}\\s+main\\s+${dir}\\s`, 'm'));
    const assigned = await run('workspaces', 'assign-teams', wsId, 'greet-team');
    assert.equal(assigned.code, 0, assigned.stderr);
    assert.match((await run('workspaces', 'get', wsId)).stdout, /^teams:\s+\S+$/m);
    const removed = await run('workspaces', 'remove', './ws', '--daemon', 'box');
    assert.equal(removed.stdout, 'Removed workspace ./ws.\n');
    assert.equal((await run('workspaces', 'remove', wsId)).stdout, `No workspace ${wsId}.\n`);

    const refused = await run('teams', 'remove', 'greet-team@1.0.0');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /installed on 1 daemon/);
    const un = await run('teams', 'uninstall', 'greet-team', '--daemon', 'box');
    assert.equal(un.stdout, 'Uninstalled greet-team@1.0.0 from daemon box.\n');
    assert.equal((await run('agents', 'remove', 'greeter')).code, 2);
    assert.match(
      (await run('agents', 'remove', 'greeter@1.0.0')).stderr,
      /is used by team greet-team@1\.0\.0/,
    );
    assert.equal((await run('teams', 'remove', 'greet-team@1.0.0')).code, 0);
    assert.equal((await run('agents', 'remove', 'greeter@1.0.0')).stdout, 'Removed agent greeter@1.0.0.\n');
  });
});

describe('svc hub', () => {
  test('runs on a free port, answers /healthz, prints the bootstrap token, stops on SIGTERM', async () => {
    const home = tempDir();
    const hub = startCli(['hub'], { env: { SVC_HOME: home, SVC_HUB_PORT: '0', SVC_LOG_LEVEL: 'info' } });
    try {
      const m = await hub.waitFor(/"msg":"hub ready"/);
      assert.ok(m);
      const ready = hub
        .stdout()
        .split('\n')
        .map((l) => (l.startsWith('{') ? JSON.parse(l) : null))
        .find((l) => l?.msg === 'hub ready');
      assert.equal(ready.database, 'sqlite');
      const health = await fetch(`${ready.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { ok: true });

      const token = /shown only this once:\s+(svc_tok_\S+)/.exec(hub.stderr())?.[1];
      assert.ok(token, hub.stderr());
      const who = await post(`${ready.url}/v1/auth/whoami`, {}, token);
      assert.equal(who.body.data.user.is_site_admin, true);
      assert.ok(statSync(path.join(home, 'hub.db')).isFile());
    } finally {
      assert.equal(await hub.stop('SIGTERM'), 0);
    }
    assert.match(hub.stdout(), /"msg":"hub stopped"/);
  });

  test('a bad environment is a usage error (exit 2)', async () => {
    const r = await runCli(['hub'], { env: { SVC_HOME: tempDir(), SVC_HUB_PORT: 'many' } });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: invalid hub configuration:\n\s+SVC_HUB_PORT: /);
  });
});

describe('svc daemon', () => {
  test('runs unconnected on a free port, answers /healthz, stops on SIGTERM', async () => {
    const home = tempDir();
    const daemon = startCli(['daemon'], {
      env: { SVC_DAEMON_HOME: home, SVC_DAEMON_PORT: '0', SVC_LOG_LEVEL: 'info' },
    });
    try {
      const m = await daemon.waitFor(
        /"url":"(http:\/\/127\.0\.0\.1:\d+)","hub":null,"msg":"daemon listening"/,
      );
      assert.equal((await fetch(`${m[1]}/healthz`)).status, 200);
    } finally {
      assert.equal(await daemon.stop('SIGTERM'), 0);
    }
    assert.match(daemon.stdout(), /"msg":"daemon stopped"/);
  });

  test('a bad environment is a usage error (exit 2)', async () => {
    const r = await runCli(['daemon'], { env: { SVC_DAEMON_HOME: tempDir(), SVC_REALM_TOKEN: 'nope' } });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^error: invalid daemon configuration:\n\s+SVC_REALM_TOKEN: must be a realm token/,
    );
  });
});

describe('svc tokens create --local', () => {
  const home = daemonHome();
  let d: RunningDaemon;
  before(async () => {
    d = await startTestDaemon(home.dir);
  });
  after(async () => {
    await d?.close();
    home.cleanup();
  });

  test('asks the local daemon for a local token: --daemon, SVC_DAEMON_URL, --json, expiry', async () => {
    const env = { SVC_CONFIG_DIR: tempDir() };
    const t0 = Date.now();
    const r = await runCli(['tokens', 'create', '--local', '--daemon', d.url], { env });
    assert.equal(r.code, 0, r.stderr);
    const token = /^token:\s+(svc_lt_\S+)$/m.exec(r.stdout)?.[1];
    assert.ok(token, r.stdout);
    assert.match(r.stdout, /^expires:\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/m);
    assert.match(r.stdout, /shown only this once/);
    assert.equal(await isLiveLocalToken(d.db, token, Date.now()), true);

    const j = await runCli(['--json', 'tokens', 'create', '--local', '--expires-in-days', '3'], {
      env: { ...env, SVC_DAEMON_URL: d.url },
    });
    assert.equal(j.code, 0, j.stderr);
    const reply = JSON.parse(j.stdout);
    assert.equal(reply.ok, true);
    assert.match(reply.data.token, /^svc_lt_/);
    const day = 24 * 60 * 60 * 1000;
    assert.ok(reply.data.expires_at >= t0 + 3 * day && reply.data.expires_at <= Date.now() + 3 * day);
    assert.equal(await isLiveLocalToken(d.db, reply.data.token, Date.now()), true);

    const tooLong = await runCli(['tokens', 'create', '--local', '--expires-in-days', '31'], {
      env: { ...env, SVC_DAEMON_URL: d.url },
    });
    assert.equal(tooLong.code, 2);
    assert.match(tooLong.stderr, /^error: --expires-in-days: a local token lives at most 30 days$/m);
  });

  test('no daemon listening: a clear error, exit 1', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const args of [
      ['tokens', 'create', '--local', '--daemon', url],
      ['--json', 'tokens', 'create', '--local'],
    ]) {
      const r = await runCli(args, { env: { SVC_CONFIG_DIR: tempDir(), SVC_DAEMON_URL: url } });
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
      const message = `cannot reach the daemon at ${url} (ECONNREFUSED); is \`svc daemon\` running? (--daemon URL or SVC_DAEMON_URL)`;
      // With --json, the error object (on stderr, like every error).
      assert.equal(
        r.stderr,
        args[0] === '--json'
          ? `${JSON.stringify({ ok: false, error: { code: 'network', message } }, null, 2)}\n`
          : `error: ${message}\n`,
      );
    }
  });

  test('without --local a name is required, and --daemon needs --local', async () => {
    const env = { SVC_CONFIG_DIR: tempDir(), SVC_HUB_URL: 'http://127.0.0.1:1', SVC_TOKEN: 'x' };
    const noName = await runCli(['tokens', 'create'], { env });
    assert.equal(noName.code, 2);
    assert.match(noName.stderr, /missing argument: name/);
    const stray = await runCli(['tokens', 'create', 'n', '--daemon', d.url], { env });
    assert.equal(stray.code, 2);
    assert.match(stray.stderr, /--daemon goes with --local/);
  });
});

describe('svc dev', () => {
  test('seeds once, prints a working token and URL, saves a profile, and is idempotent', async () => {
    const cwd = tempDir();
    const env = { SVC_HUB_PORT: '0', SVC_DAEMON_PORT: '0', SVC_CONFIG_DIR: path.join(cwd, 'config') };
    const first = startCli(['dev'], { env, cwd });
    let token: string;
    try {
      await first.waitFor(/Press Ctrl-C to stop/);
      const out = first.stdout();
      assert.match(out, /seeded organization "demo"/);
      const url = /^\s+hub\s+(http:\/\/\S+)$/m.exec(out)?.[1];
      token = /^\s+token\s+(svc_tok_\S+)/m.exec(out)?.[1] ?? '';
      assert.ok(url && token, out);
      const who = await post(`${url}/v1/auth/whoami`, {}, token);
      assert.equal(who.status, 200);
      assert.equal(who.body.data.user.is_site_admin, true);
      // The web console is served at the printed address (built from the sources at first request).
      const consoleUrl = /^\s+console\s+(http:\/\/\S+)/m.exec(out)?.[1];
      assert.equal(consoleUrl, `${url}/`);
      const page = await fetch(consoleUrl!);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      assert.match(await page.text(), /<title>svc console<\/title>/);
      assert.match(out, /svc realms list --org demo/);
      assert.match(out, /^\s+agent\s+hello@1\.0\.0$/m);
      assert.match(out, /^\s+team\s+hello-team@1\.0\.0 \(installed on daemon dev\)$/m);
      const wsPath = path.join(cwd, '.svc', 'workspace');
      assert.match(out, new RegExp(`^\\s+workspace\\s+${wsPath} \\(\\S+\\)$`, 'm'));
      const daemonUrl = /^\s+daemon\s+(http:\/\/\S+)$/m.exec(out)?.[1];
      assert.ok(daemonUrl, out);
      assert.equal((await fetch(`${daemonUrl}/healthz`)).status, 200);

      // The saved profile makes plain commands work (no SVC_HUB_URL / SVC_TOKEN).
      const orgs = await runCli(['orgs', 'list'], { env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR } });
      assert.equal(orgs.code, 0, orgs.stderr);
      assert.match(orgs.stdout, /\sdemo\s+Demo\s+active\s+dev@localhost\s/);
      const realms = await runCli(['realms', 'list', '--org', 'demo'], {
        env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR },
      });
      assert.match(realms.stdout, /\sdefault\s/);
      // The printed `svc runs start … --watch` line runs the example team to success.
      const runLine = /^\s+(?:npx )?svc (runs start .+)$/m.exec(out)?.[1];
      assert.ok(runLine, out);
      const run = await runCli(runLine.split(/\s+/), { env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR } });
      assert.equal(run.code, 0, run.stderr + run.stdout);
      assert.match(run.stdout + run.stderr, /hello-team-1: succeeded/);
      // The owner can sign in with the printed password.
      const password = /password (\S+)/.exec(out)?.[1];
      const signIn = await post(`${url}/v1/auth/sign_in`, { email: 'dev@localhost', password });
      assert.equal(signIn.status, 200);
    } finally {
      assert.equal(await first.stop('SIGTERM'), 0);
    }
    assert.ok(statSync(path.join(cwd, '.svc', 'hub.db')).isFile());

    // Another profile is current (a real hub signed in to): svc dev adds its own and leaves it so.
    const configFile = path.join(env.SVC_CONFIG_DIR, 'config.json');
    const saved = JSON.parse(readFileSync(configFile, 'utf8'));
    assert.equal(saved.current, 'dev');
    saved.profiles.work = { hub_url: 'http://127.0.0.1:9', token: 'svc_tok_x', token_kind: 'personal' };
    saved.current = 'work';
    writeFileSync(configFile, JSON.stringify(saved));

    const second = startCli(['dev'], { env: { ...env, PATH: path.dirname(process.execPath) }, cwd });
    try {
      await second.waitFor(/Press Ctrl-C to stop/);
      const out = second.stdout();
      assert.doesNotMatch(out, /seeded/);
      const after = JSON.parse(readFileSync(configFile, 'utf8'));
      assert.equal(after.current, 'work');
      assert.ok(after.profiles.dev.token);
      assert.match(out, /profile "work" stays current: `(npx )?svc profile use dev` switches/);
      // No svc on PATH in the test environment: the printed commands go through npx, as dev.
      assert.match(out, /^ {2}npx svc --profile dev whoami$/m);
      const listed = await runCli(['profile', 'list'], { env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR } });
      assert.match(listed.stdout, /^\*\s+work\s+http:\/\/127\.0\.0\.1:9/m);
      const use = await runCli(['profile', 'use', 'dev'], { env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR } });
      assert.equal(use.code, 0, use.stderr);
      assert.equal(JSON.parse(readFileSync(configFile, 'utf8')).current, 'dev');
      const unknown = await runCli(['profile', 'use', 'nope'], {
        env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR },
      });
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /no profile named "nope"; profiles: dev, work/);
      assert.equal(/^\s+token\s+(svc_tok_\S+)/m.exec(out)?.[1], token);
      const orgs = await runCli(['--json', 'orgs', 'list'], { env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR } });
      assert.equal(JSON.parse(orgs.stdout).data.filter((o: { slug: string }) => o.slug === 'demo').length, 1);
      const profile = { env: { SVC_CONFIG_DIR: env.SVC_CONFIG_DIR } };
      const agents = await runCli(['--json', 'agents', 'list', '--org', 'demo'], profile);
      assert.deepEqual(
        JSON.parse(agents.stdout).data.map(
          (a: { name: string; version: string }) => `${a.name}@${a.version}`,
        ),
        ['hello@1.0.0'],
      );
      const teams = await runCli(['--json', 'teams', 'list', '--org', 'demo'], profile);
      const team = JSON.parse(teams.stdout).data;
      assert.deepEqual(
        team.map((t: { name: string }) => t.name),
        ['hello-team'],
      );
      assert.equal(team[0].definition.phases.length, 2);
      const installs = await runCli(
        ['--json', 'teams', 'installs', '--daemon', 'dev', '--org', 'demo'],
        profile,
      );
      assert.deepEqual(
        JSON.parse(installs.stdout).data.map((i: { team_version_id: string; status: string }) => [
          i.team_version_id,
          i.status,
        ]),
        [[team[0].id, 'installed']],
      );
      const ws = await runCli(['--json', 'workspaces', 'list', '--org', 'demo'], profile);
      const wsData = JSON.parse(ws.stdout).data;
      assert.equal(wsData.length, 1);
      assert.equal(wsData[0].path, path.join(cwd, '.svc', 'workspace'));
      assert.deepEqual(wsData[0].team_ids, [team[0].team_id]);
    } finally {
      assert.equal(await second.stop('SIGINT'), 0);
    }
  });
});
