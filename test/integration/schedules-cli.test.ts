import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signBody } from '../../src/hub/notifications/signing.js';
import { killChildren, runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { createOrgWithOwner } from '../helpers/world.js';

/** `svc schedules …` and `svc triggers …` as a child process against a real hub. */
describe('svc schedules and svc triggers', () => {
  let h: TestHub;
  let org: Awaited<ReturnType<typeof createOrgWithOwner>>;
  const svc = (...args: string[]) =>
    runCli(args, { env: { SVC_HUB_URL: h.url, SVC_TOKEN: org.owner.token } });
  before(async () => {
    h = await startTestHub();
    org = await createOrgWithOwner(h, 'clisched');
    await h.ok('agents/register', {
      org_id: org.orgId,
      manifest: { name: 'cli-agent', version: '1.0.0', agent_type: 'exec', command: ['true'] },
    });
  });
  after(async () => {
    await h.close();
    assert.equal(await killChildren(), 0);
  });

  test('schedules new, list, get, update, trigger, remove', async () => {
    const made = await svc(
      'schedules',
      'new',
      '0 9 * * 1-5',
      '--agent',
      'cli-agent',
      '--timezone',
      'Europe/Paris',
      '--overlap',
      'queue',
      '--input',
      'n=3',
      '--json',
    );
    assert.equal(made.code, 0, made.stderr);
    const s = JSON.parse(made.stdout).data;
    assert.equal(s.timezone, 'Europe/Paris');
    assert.equal(s.overlap, 'queue');
    assert.deepEqual(s.inputs, { n: 3 });

    const list = await svc('schedules', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /0 9 \* \* 1-5/);
    const got = await svc('schedules', 'get', s.id);
    assert.match(got.stdout, /Europe\/Paris/);
    const off = await svc('schedules', 'update', s.id, '--disable', '--json');
    assert.equal(JSON.parse(off.stdout).data.enabled, false);
    const bad = await svc('schedules', 'update', s.id, '--cron', 'every day');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /cron/);
    const run = await svc('schedules', 'trigger', s.id);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Started run cli-agent-1/);
    const gone = await svc('schedules', 'remove', s.id);
    assert.match(gone.stdout, /Removed schedule/);
  });

  test('triggers new, list, get, rotate, remove', async () => {
    const made = await svc('triggers', 'new', 'deploys', '--agent', 'cli-agent');
    assert.equal(made.code, 0, made.stderr);
    const secret = /^\s+(whsec_\S+)$/m.exec(made.stdout)![1]!;
    const url = /^url:\s+(\S+)$/m.exec(made.stdout)![1]!;
    const id = url.split('/').pop()!;
    const body = JSON.stringify({ version: '1.2.3' });
    const ts = Date.now();
    const res = await fetch(`${h.url}/v1/hooks/${id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-svc-timestamp': String(ts),
        'x-svc-signature': signBody(secret, ts, body),
      },
      body,
    });
    assert.equal(res.status, 201);
    const list = await svc('triggers', 'list');
    assert.match(list.stdout, /deploys/);
    const got = await svc('triggers', 'get', id);
    assert.match(got.stdout, /started \(HTTP 201\) run /);
    assert.equal(got.stdout.includes(secret), false);
    const rotated = await svc('triggers', 'rotate', id);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /whsec_/);
    assert.equal(rotated.stdout.includes(secret), false);
    const gone = await svc('triggers', 'remove', id);
    assert.match(gone.stdout, /Removed trigger/);
  });
});
