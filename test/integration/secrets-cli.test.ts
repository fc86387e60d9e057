import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadKeyRing } from '../../src/hub/secrets/keys.js';
import { killChildren, runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { createOrgWithOwner } from '../helpers/world.js';

/** `svc secrets …` as a child process against a real hub: values go in, never come out. */
describe('svc secrets', () => {
  let h: TestHub;
  let org: Awaited<ReturnType<typeof createOrgWithOwner>>;
  const VALUE = 'cli-secret-value-93b1f0a2';
  const svc = (args: string[], input?: string) =>
    runCli(args, {
      env: { SVC_HUB_URL: h.url, SVC_TOKEN: org.owner.token },
      ...(input !== undefined ? { input } : {}),
    });
  before(async () => {
    h = await startTestHub();
    org = await createOrgWithOwner(h, 'clisecrets');
  });
  after(async () => {
    await h.close();
    assert.equal(await killChildren(), 0);
  });

  test('set from stdin or --value, list, remove; no output shows a value', async () => {
    const outputs: string[] = [];
    const ok = async (args: string[], input?: string) => {
      const r = await svc(args, input);
      assert.equal(r.code, 0, r.stderr);
      outputs.push(r.stdout, r.stderr);
      return r;
    };
    const set = await ok(['secrets', 'set', 'API_KEY', '--realm', 'default'], `${VALUE}\n`);
    assert.match(set.stdout, /Set API_KEY in realm default/);
    await ok(['secrets', 'set', 'ORG_KEY', '--org', 'clisecrets', '--value', VALUE]);
    const list = await ok(['secrets', 'list', '--realm', 'default']);
    assert.match(list.stdout, /API_KEY/);
    const json = await ok(['secrets', 'list', '--org', 'clisecrets', '--json']);
    assert.deepEqual(
      JSON.parse(json.stdout).data.map((s: { name: string }) => s.name),
      ['ORG_KEY'],
    );
    assert.match(
      (await ok(['secrets', 'remove', 'API_KEY', '--realm', 'default'])).stdout,
      /Removed API_KEY/,
    );
    assert.match((await ok(['secrets', 'remove', 'API_KEY', '--realm', 'default'])).stdout, /was not set/);
    for (const o of outputs) assert.ok(!o.includes(VALUE), o);

    const noScope = await svc(['secrets', 'set', 'X'], 'v');
    assert.equal(noScope.code, 2);
    assert.match(noScope.stderr, /give --realm .* or --org/);
    const empty = await svc(['secrets', 'set', 'X', '--realm', 'default'], '');
    assert.equal(empty.code, 2);
    const bad = await svc(['secrets', 'set', 'lower', '--realm', 'default'], 'v');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /name/);
  });

  test('rotate-key puts a fresh key first in the key file and keeps the old one', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'svc-rotate-'));
    try {
      const [first] = loadKeyRing({ home });
      const r = await runCli(['secrets', 'rotate-key', '--home', home], { env: {} });
      assert.equal(r.code, 0, r.stderr);
      const ring = loadKeyRing({ home });
      assert.equal(ring.length, 2);
      assert.deepEqual(ring[1], first);
      const file = path.join(home, 'secrets.key');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.ok(!r.stdout.includes(readFileSync(file, 'utf8').split('\n')[0]!));
      const withEnv = await runCli(['secrets', 'rotate-key', '--home', home], {
        env: { SVC_SECRETS_KEY: first!.toString('base64') },
      });
      assert.equal(withEnv.code, 2);
      assert.match(withEnv.stderr, /SVC_SECRETS_OLD_KEYS/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
