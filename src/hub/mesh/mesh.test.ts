import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHub, type TestHub } from '../../../test/helpers/hub.js';
import { buildWorld, type World } from '../../../test/helpers/world.js';
import { BUILTIN_ADAPTERS, parseEnabledAdapters, visibleAdapters } from './adapters.js';

const ALL = ['tailscale', 'headscale', 'netbird', 'zerotier'];

describe('mesh adapters (pure)', () => {
  it('parses mesh.enabled_adapters as a comma list or a JSON array', () => {
    const cases: [string | null, string[]][] = [
      [null, []],
      ['', []],
      ['tailscale', ['tailscale']],
      [' Tailscale , netbird ,,', ['tailscale', 'netbird']],
      ['["zerotier","headscale"]', ['zerotier', 'headscale']],
      ['[1, "netbird", null]', ['netbird']],
      ['[broken', []],
      ['{"a":1}', ['{"a":1}']],
    ];
    for (const [value, expected] of cases) {
      assert.deepEqual([...parseEnabledAdapters(value)], expected, String(value));
    }
  });

  it('shows an administrator every adapter and others only the enabled ones', () => {
    assert.deepEqual(
      visibleAdapters(true, null).map((a) => [a.id, a.enabled]),
      ALL.map((id) => [id, false]),
    );
    assert.deepEqual(visibleAdapters(false, null), []);
    assert.deepEqual(
      visibleAdapters(false, 'netbird,unknown').map((a) => [a.id, a.enabled]),
      [['netbird', true]],
    );
    assert.deepEqual(
      visibleAdapters(true, 'netbird').map((a) => a.enabled),
      [false, false, true, false],
    );
  });

  it('every adapter declares typed settings, with at least one required secret', () => {
    for (const a of BUILTIN_ADAPTERS) {
      assert.ok(a.name && a.description, a.id);
      assert.ok(a.settings.length > 0, a.id);
      for (const s of a.settings) {
        assert.ok(['string', 'secret', 'url', 'boolean'].includes(s.type), `${a.id}.${s.key}`);
        assert.match(s.key, /^[a-z][a-z_]*$/);
        assert.ok(s.label);
      }
      assert.ok(
        a.settings.some((s) => s.type === 'secret' && s.required),
        a.id,
      );
    }
  });
});

describe('mesh/adapters/list', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
  });
  after(() => h.close());

  it('answers exactly {ok, adapters}: every adapter for the administrator, none by default for others', async () => {
    const admin = await h.call('mesh/adapters/list', undefined);
    assert.equal(admin.status, 200);
    assert.deepEqual(Object.keys(admin.body).sort(), ['adapters', 'ok']);
    assert.deepEqual(
      admin.body.adapters.map((a: { id: string }) => a.id),
      ALL,
    );
    const ts = admin.body.adapters[0];
    assert.deepEqual(Object.keys(ts).sort(), ['description', 'enabled', 'id', 'name', 'settings']);
    assert.equal(ts.enabled, false);
    assert.deepEqual(Object.keys(ts.settings[0]).sort(), ['key', 'label', 'required', 'type']);
    // A call without any body (no content type) works too.
    const bare = await fetch(`${h.url}/v1/mesh/adapters/list`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.tokens.org_member}` },
    });
    assert.equal(bare.status, 200);
    assert.deepEqual(await bare.json(), { ok: true, adapters: [] });
  });

  it('shows users the adapters enabled by mesh.enabled_adapters', async () => {
    await h.ok('settings/set', { key: 'mesh.enabled_adapters', value: '["headscale","zerotier"]' });
    const user = await h.ok('mesh/adapters/list', {}, w.tokens.outsider);
    assert.deepEqual(
      user.adapters.map((a: { id: string; enabled: boolean }) => [a.id, a.enabled]),
      [
        ['headscale', true],
        ['zerotier', true],
      ],
    );
    const admin = await h.ok('mesh/adapters/list', {});
    assert.deepEqual(
      admin.adapters.map((a: { enabled: boolean }) => a.enabled),
      [false, true, false, true],
    );
    await h.ok('settings/set', { key: 'mesh.enabled_adapters', value: 'tailscale' });
    const one = await h.ok('mesh/adapters/list', {}, w.tokens.org_member);
    assert.deepEqual(
      one.adapters.map((a: { id: string }) => a.id),
      ['tailscale'],
    );
    await h.ok('settings/remove', { key: 'mesh.enabled_adapters' });
    assert.deepEqual((await h.ok('mesh/adapters/list', {}, w.tokens.org_member)).adapters, []);
  });

  it('refuses a realm token (forbidden) and an anonymous caller (unauthorized)', async () => {
    const rt = await h.call('mesh/adapters/list', {}, w.tokens.realm_token);
    assert.equal(rt.status, 403);
    assert.equal(rt.body.error.code, 'forbidden');
    const anon = await h.call('mesh/adapters/list', {}, null);
    assert.equal(anon.status, 401);
    assert.equal(anon.body.error.code, 'unauthorized');
  });
});
