import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';
import { BROWSER_SKIP, openBrowser, signIn as signInAs, type TestBrowser } from '../helpers/browser.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam } from '../helpers/runs.js';
import { addOrgUser, buildWorld, type World } from '../helpers/world.js';

/**
 * Managing the hub from the web console in headless Chromium against a real hub: channels and rules,
 * tokens, realm members, schedules and secrets through the form dialog; a realm member is offered
 * nothing and the API refuses them; tables scroll visibly at a phone's width. Every wait is a
 * Playwright locator condition. SVC_CONSOLE_SCREENSHOT=1 saves each page to docs/console-<page>.png.
 */
const DOCS = process.env.SVC_CONSOLE_SCREENSHOT
  ? fileURLToPath(new URL('../../docs/', import.meta.url))
  : null;
const WAIT = 20_000;

describe('managing the hub from the web console', { skip: BROWSER_SKIP }, () => {
  let h: TestHub;
  let w: World;
  let b: TestBrowser;
  let ada: { id: string; handle: string; token: string; email: string };
  let vic: { id: string; handle: string; token: string; email: string };
  let bob: { id: string; handle: string; token: string; email: string };
  const agents = agentDir();

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    const user = async (email: string) => ({ ...(await addOrgUser(h, w.orgId, email, 'member')), email });
    // Ada administers the realm (an org member, not an org admin); Vic only watches; Bob is not in it.
    ada = await user('ada@manage.test');
    vic = await user('vic@manage.test');
    bob = await user('bob@manage.test');
    for (const [u, role] of [
      [ada, 'admin'],
      [vic, 'member'],
    ] as const) {
      await h.ok('realms/add_member', { realm_id: w.realmId, member_type: 'user', member_id: u.id, role });
    }
    await registerAgent(h, w.orgId, 'writer', agents.write('writer', 'console.log("hi")'));
    await registerTeam(h, w.orgId, 'essay', [{ name: 'draft', agent: 'writer' }]);
    b = await openBrowser();
    b.context.setDefaultTimeout(WAIT);
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.url });
  });
  after(async () => {
    await b?.close();
    await h?.close();
    agents.cleanup();
  });

  const tab = () => b.tab();
  async function signIn(page: Page, who: { email: string }, hash: string) {
    await signInAs(page, h.url, who.email, hash);
    await page.locator('.scope .role:not(:empty)').waitFor();
  }
  async function go(page: Page, link: string, heading: string) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link }).click();
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  }
  async function shot(page: Page, name: string) {
    if (DOCS) await page.screenshot({ path: path.join(DOCS, `console-${name}.png`), fullPage: true });
  }
  const dialog = (page: Page, name: string | RegExp) => page.getByRole('dialog', { name });
  async function closed(d: Locator) {
    await d.waitFor({ state: 'hidden' });
  }

  let adaPage: Page;

  it('an admin creates a channel and a rule, edits the rule and removes it', async () => {
    const page = await tab();
    adaPage = page;
    await signIn(page, ada, '#/channels');
    await page.getByRole('heading', { name: 'Notification channels', level: 1 }).waitFor();
    // Escape closes the dialog and gives the focus back to the button that opened it.
    await page.getByRole('button', { name: 'New channel' }).click();
    const d = dialog(page, 'New notification channel');
    await d.locator('#f-scope:focus').waitFor();
    await page.keyboard.press('Escape');
    await closed(d);
    await page.locator('.page-head button:focus', { hasText: 'New channel' }).waitFor();
    // A refused URL: the hub's message at the top, and beside the field it names.
    await page.getByRole('button', { name: 'New channel' }).click();
    await d.getByLabel('Name').fill('alerts');
    await d.getByLabel('Webhook URL').fill('ftp://hooks.example.test/x');
    await d.getByRole('button', { name: 'Create channel' }).click();
    await d.getByRole('alert').filter({ hasText: 'webhook_url' }).waitFor();
    await d.locator('#f-webhook_url-error', { hasText: 'http or https' }).waitFor();
    assert.equal(await d.getByLabel('Webhook URL').getAttribute('aria-invalid'), 'true');
    const url = 'https://hooks.example.test/T000/secret-path';
    await d.getByLabel('Webhook URL').fill(url);
    await d.getByRole('button', { name: 'Create channel' }).click();
    // The signing secret, once.
    const secret = (await d.locator('.once-value code').textContent()) ?? '';
    assert.ok(secret.length >= 16, secret);
    await d.getByText('It will not be shown again.').waitFor();
    await shot(page, 'channel-secret');
    await d.getByRole('button', { name: 'Done' }).click();
    await closed(d);
    await page.getByRole('link', { name: 'alerts' }).waitFor();
    const html = await page.content();
    assert.ok(!html.includes(secret), 'the signing secret stays out of the page');
    assert.ok(!html.includes(url), 'the webhook URL (a secret) is not shown after saving');
    const channel = (await h.ok('notification_channels/list', { realm_id: w.realmId }, ada.token)).data[0];
    assert.deepEqual(channel.destinations, [{ type: 'webhook', webhook_url: url }]);

    // A rule: run.ended of failed runs goes to the channel.
    await page.getByRole('button', { name: 'New rule' }).click();
    const r = dialog(page, 'New notification rule');
    await r.getByLabel('Event', { exact: true }).selectOption('run.ended');
    await r.getByRole('checkbox', { name: 'alerts' }).check();
    await r.getByLabel('Only in state').selectOption('failed');
    await shot(page, 'channels-rule');
    await r.getByRole('button', { name: 'Create rule' }).click();
    await closed(r);
    const row = page.locator('table.rules tr', { hasText: 'run.ended' });
    await row.getByText('state failed').waitFor();
    // Edited: another event, any state (the old rule is replaced).
    await page.getByRole('button', { name: 'Edit rule run.ended' }).click();
    const e = dialog(page, 'Edit rule for run.ended');
    assert.equal(await e.getByRole('checkbox', { name: 'alerts' }).isChecked(), true);
    await e.getByLabel('Event', { exact: true }).selectOption('review.requested');
    await e.getByLabel('Only in state').selectOption('');
    await e.getByRole('button', { name: 'Save' }).click();
    await closed(e);
    await page.locator('table.rules tr', { hasText: 'review.requested' }).getByText('always').waitFor();
    await row.waitFor({ state: 'detached' });
    const rules = (await h.ok('realms/list_notification_rules', { realm_id: w.realmId }, ada.token)).data;
    assert.deepEqual(
      rules.map((x: { event: string; channel_ids: string[]; filter: unknown }) => [x.event, x.channel_ids]),
      [['review.requested', [channel.id]]],
    );
    await shot(page, 'channels');
    // Removed, after confirming.
    await page.getByRole('button', { name: 'Remove rule review.requested' }).click();
    const rm = dialog(page, 'Remove the rule for review.requested?');
    await rm.getByRole('button', { name: 'Remove' }).click();
    await closed(rm);
    await page.getByText('No rules: no event is sent anywhere yet.').waitFor();
    assert.equal(
      (await h.ok('realms/list_notification_rules', { realm_id: w.realmId }, ada.token)).data.length,
      0,
    );
  });

  it('a token is shown once, with a copy button, and can be revoked', async () => {
    const page = adaPage;
    await go(page, 'Tokens', 'Access tokens');
    await page.getByRole('button', { name: 'New token' }).click();
    const d = dialog(page, 'New access token');
    await d.getByLabel('Name').fill('laptop CLI');
    await d.getByRole('button', { name: 'Create token' }).click();
    const token = (await d.locator('.once-value code').textContent()) ?? '';
    assert.match(token, /^svc_tok_/);
    await d.getByText('It will not be shown again.').waitFor();
    await d.getByRole('button', { name: 'Copy' }).click();
    await d.getByText('Copied.').waitFor();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), token);
    await shot(page, 'tokens-new');
    assert.equal((await h.call('auth/whoami', {}, token)).status, 200);
    await d.getByRole('button', { name: 'Done' }).click();
    await closed(d);
    const row = page.locator('table.tokens tr', { hasText: 'laptop CLI' });
    await row.waitFor();
    assert.ok(!(await page.content()).includes(token), 'the token is not in the page any more');
    await shot(page, 'tokens');
    await page.getByRole('button', { name: 'Revoke token laptop CLI' }).click();
    await dialog(page, 'Remove token laptop CLI?').getByRole('button', { name: 'Remove' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await h.call('auth/whoami', {}, token)).status, 401);
  });

  it('an admin adds a person to the realm with a role and changes it', async () => {
    const page = adaPage;
    await go(page, 'Members', 'Members');
    await page.locator('table.members tr', { hasText: bob.email }).waitFor();
    // Ada is not an organization admin: no invitation for her.
    assert.equal(await page.getByRole('button', { name: 'Invite person' }).count(), 0);
    await page.getByRole('button', { name: 'Add to realm' }).click();
    const d = dialog(page, /^Add to realm/);
    await d.getByLabel('Person').selectOption(bob.id);
    await d.getByLabel('Role').selectOption('operator');
    await d.getByRole('button', { name: 'Add' }).click();
    await closed(d);
    const row = page.locator('table.realm-members tr', { hasText: bob.handle });
    await row.getByRole('cell', { name: 'operator', exact: true }).waitFor();
    await page.getByRole('button', { name: `Change role of ${bob.handle} in the realm` }).click();
    const c = dialog(page, /^Role of /);
    await c.getByLabel('Role').selectOption('admin');
    await shot(page, 'members-role');
    await c.getByRole('button', { name: 'Save' }).click();
    await closed(c);
    await row.getByRole('cell', { name: 'admin', exact: true }).waitFor();
    const members = (await h.ok('realms/list_members', { realm_id: w.realmId }, ada.token)).data;
    assert.equal(members.find((m: { member_id: string }) => m.member_id === bob.id)?.role, 'admin');
    await shot(page, 'members');
  });

  it('an admin creates a schedule and a secret whose value never reaches the page', async () => {
    const page = adaPage;
    await go(page, 'Schedules', 'Schedules');
    await page.getByRole('button', { name: 'New schedule' }).click();
    const d = dialog(page, 'New schedule');
    await d.getByLabel('Team').selectOption('essay');
    await d.getByLabel('Cron').fill('61 * * * *');
    await d.getByLabel('Time zone').fill('Europe/Paris');
    await d.getByRole('button', { name: 'Create schedule' }).click();
    await d.locator('#f-cron-error').waitFor();
    await d.getByLabel('Cron').fill('0 6 * * 1-5');
    await shot(page, 'schedules-new');
    await d.getByRole('button', { name: 'Create schedule' }).click();
    await closed(d);
    await page.getByRole('cell', { name: '0 6 * * 1-5 Europe/Paris' }).waitFor();
    const [schedule] = (await h.ok('schedules/list', { realm_id: w.realmId }, ada.token)).data;
    assert.equal(schedule.team, 'essay');
    // A trigger: its hook URL and signing secret, once.
    await page.getByRole('button', { name: 'New trigger' }).click();
    const t = dialog(page, 'New trigger');
    await t.getByLabel('Name').fill('pushes');
    await t.getByRole('button', { name: 'Create trigger' }).click();
    const hookSecret = (await t.locator('.once-value code').textContent()) ?? '';
    const [trigger] = (await h.ok('triggers/list', { realm_id: w.realmId }, ada.token)).data;
    await t.getByText(trigger.url).waitFor();
    await t.getByText('It will not be shown again.').waitFor();
    await shot(page, 'triggers-new');
    await t.getByRole('button', { name: 'Done' }).click();
    await closed(t);
    await page.getByRole('heading', { name: 'pushes', level: 3 }).waitFor();
    assert.ok(hookSecret.length >= 16 && !(await page.content()).includes(hookSecret));
    await shot(page, 'schedules');

    const value = 'sk-live-do-not-leak-4242';
    await go(page, 'Secrets', 'Secrets');
    // The organization's secrets are for its admins; Ada sees why, not a button.
    await page.getByText("Only organization owners and admins see these secrets' names.").waitFor();
    await page.getByRole('button', { name: 'New secret' }).click();
    const s = dialog(page, /^New secret in Realm/);
    await s.getByLabel('Name').fill('API_KEY');
    await s.getByLabel('Value').fill(value);
    assert.equal(await s.getByLabel('Value').getAttribute('type'), 'password');
    await s.getByRole('button', { name: 'Save secret' }).click();
    await closed(s);
    const row = page.locator('table.secrets tr', { hasText: 'API_KEY' });
    await row.getByText('hidden').waitFor();
    assert.ok(!(await page.content()).includes(value), 'the value is not in the page');
    assert.ok(!(await page.evaluate<string>('document.body.innerText')).includes(value));
    const names = (await h.ok('secrets/list', { realm_id: w.realmId }, ada.token)).data;
    assert.deepEqual(
      names.map((x: { name: string }) => x.name),
      ['API_KEY'],
    );
    await shot(page, 'secrets');
  });

  it("shows the caller's role once a failed read of the realm succeeds again", async () => {
    const page = await tab();
    let refused = 0;
    await page.route('**/v1/realms/get', async (route) => {
      if (refused > 0) return route.continue();
      refused++;
      await route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ ok: false, error: { code: 'unavailable', message: 'try again' } }),
      });
    });
    await signIn(page, vic, '#/schedules');
    await page.locator('.scope .role', { hasText: 'member' }).waitFor();
    assert.equal(refused, 1);
    await page.close();
  });

  it('a realm member is offered no change, and the API refuses one forced through', async () => {
    const page = await tab();
    await signIn(page, vic, '#/schedules');
    await page.locator('.scope .role', { hasText: 'member' }).waitFor();
    await page.getByRole('cell', { name: '0 6 * * 1-5 Europe/Paris' }).waitFor();
    const offered = async () =>
      page
        .getByRole('button', {
          name: /^(New |Add to realm|Invite|Edit|Remove|Change role|Set value|Run now)/,
        })
        .count();
    assert.equal(await offered(), 0, 'schedules');
    await go(page, 'Channels', 'Notification channels');
    await page.getByText("Seeing a realm's channels needs the operator role").waitFor();
    assert.equal(await offered(), 0, 'channels');
    await go(page, 'Secrets', 'Secrets');
    await page.getByText("Only realm admins see these secrets' names.").waitFor();
    assert.equal(await offered(), 0, 'secrets');
    await go(page, 'Members', 'Members');
    await page.locator('table.realm-members tr', { hasText: vic.handle }).waitFor();
    assert.equal(await offered(), 0, 'members');
    const refused = [
      await h.call(
        'notification_channels/new',
        {
          realm_id: w.realmId,
          name: 'x',
          destinations: [{ type: 'webhook', webhook_url: 'https://a.test/' }],
        },
        vic.token,
      ),
      await h.call('schedules/new', { realm_id: w.realmId, team: 'essay', cron: '0 0 * * *' }, vic.token),
      await h.call('secrets/set', { realm_id: w.realmId, name: 'X', value: 'y' }, vic.token),
      await h.call(
        'realms/add_member',
        { realm_id: w.realmId, member_type: 'user', member_id: bob.id, role: 'member' },
        vic.token,
      ),
    ];
    assert.deepEqual(
      refused.map((x) => x.status),
      [403, 403, 403, 403],
    );
    await page.close();
  });

  it('at 390 px a table wider than the screen scrolls in its box, with a visible sign', async () => {
    const page = adaPage;
    await page.setViewportSize({ width: 390, height: 800 });
    await go(page, 'Tokens', 'Access tokens');
    const wrap = page.locator('.table-wrap', { has: page.locator('table.tokens') });
    await wrap.locator('tbody tr:not(.skeleton)').first().waitFor();
    // Browser-side code is a string: this project's TypeScript has no DOM library.
    const raw = await page.evaluate(`(() => {
      const el = document.querySelector('.table-wrap:has(table.tokens)');
      const s = getComputedStyle(el);
      return { scroll: el.scrollWidth, client: el.clientWidth, overflow: s.overflowX, image: s.backgroundImage, attach: s.backgroundAttachment };
    })()`);
    const box = raw as { scroll: number; client: number; overflow: string; image: string; attach: string };
    assert.ok(box.scroll > box.client, `the table scrolls (${box.scroll} > ${box.client})`);
    assert.equal(box.overflow, 'auto');
    assert.match(box.image, /radial-gradient/, 'a scroll shadow');
    assert.match(box.attach, /local/, 'covers that move with the content reveal the shadow');
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `the page itself overflows by ${overflow}px`);
    await shot(page, 'narrow');
    await page.close();
    assert.deepEqual(b.problems, [], 'no script error or CSP violation');
  });
});
