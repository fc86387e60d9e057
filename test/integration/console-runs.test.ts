import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { BROWSER_SKIP, openBrowser, signIn, type TestBrowser } from '../helpers/browser.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { addOrgUser, buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * Runs from the console in a real browser: start one (team, inputs), watch it succeed, run it again
 * with the same inputs, find runs by name, by who started them and by date. Waits are on page
 * conditions only. SVC_CONSOLE_SCREENSHOT=1 saves the start dialog to docs/console-start-run.png.
 */
const SCREENSHOT = process.env.SVC_CONSOLE_SCREENSHOT
  ? fileURLToPath(new URL('../../docs/console-start-run.png', import.meta.url))
  : null;

describe('console: start runs and find them', { skip: BROWSER_SKIP }, () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  let b: TestBrowser;
  let ada: { id: string; handle: string; token: string };
  const home = daemonHome();
  const agents = agentDir();

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { logFlushMs: 50 },
    });
    await whenConnected(d);
    ada = await addOrgUser(h, w.orgId, 'ada@runs.test', 'member');
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: ada.id,
      role: 'operator',
    });
    const greeter = agents.write(
      'greeter',
      `const inputs = JSON.parse(process.env.SVC_INPUTS);
console.log('hello ' + inputs.who + ' x' + (inputs.times ?? 1));
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ greeted: inputs.who }));`,
    );
    await registerAgent(h, w.orgId, 'greeter', greeter);
    await registerTeam(h, w.orgId, 'greet', [{ name: 'hello', agent: 'greeter' }]);
    b = await openBrowser();
  });

  after(async () => {
    await b?.close();
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
  });

  const badge = (page: Page, state: string) => page.locator(`.page-head .badge.state-${state}`);
  const runIdOf = (page: Page) => new URL(page.url()).hash.replace('#/runs/', '');

  it('starts a run of a team with inputs, watches it succeed, and runs it again', async () => {
    const page = await b.tab();
    await signIn(page, h.url, 'ada@runs.test');
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await page.getByText('No runs in this realm yet').waitFor();

    await page.getByRole('button', { name: 'Start a run' }).click();
    const dialog = page.getByRole('dialog', { name: 'Start a run' });
    await dialog.locator('select[name="name"]').selectOption('greet');
    await dialog.getByLabel('Input 1 name').fill('who');
    await dialog.getByLabel('Input 1 value').fill('otters');
    // A bad JSON input is named before anything is sent.
    await dialog.getByRole('button', { name: 'edit as JSON' }).click();
    await dialog.locator('textarea[name="inputs-json"]').fill('{"who": "otters", ');
    await dialog.getByRole('button', { name: 'Start run' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'inputs are not valid JSON' }).waitFor();
    await dialog.locator('textarea[name="inputs-json"]').fill('{"who": "otters", "times": 2}');
    if (SCREENSHOT) await dialog.screenshot({ path: SCREENSHOT });
    await dialog.getByRole('button', { name: 'Start run' }).click();

    // The new run's page opens and follows it to the end.
    await page.waitForURL(/#\/runs\/[0-9a-f-]{36}$/);
    const first = runIdOf(page);
    await page.getByRole('heading', { name: 'greet-1', level: 1 }).waitFor();
    await badge(page, 'succeeded').waitFor();
    await page.locator('.logs', { hasText: 'hello otters x2' }).waitFor();
    const run = await waitForRun(h, first, (r) => r.state === 'succeeded');
    assert.deepEqual(run.inputs, { who: 'otters', times: 2 });
    assert.equal(run.created_by_user_id, ada.id);
    // Times carry their date; the duration says what it counts.
    await page
      .locator('.run-facts time', { hasText: /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/ })
      .first()
      .waitFor();
    await page.getByText('Ran for').waitFor();

    // Run again: the same team and inputs, filled in; a new run starts.
    await page.getByRole('button', { name: 'Run again…' }).click();
    const again = page.getByRole('dialog', { name: 'Run again' });
    await again.locator('form[aria-busy="false"]').waitFor();
    assert.equal(await again.locator('select[name="name"]').inputValue(), 'greet');
    assert.deepEqual(JSON.parse(await again.locator('textarea[name="inputs-json"]').inputValue()), {
      who: 'otters',
      times: 2,
    });
    await again.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('heading', { name: 'greet-2', level: 1 }).waitFor();
    assert.notEqual(runIdOf(page), first);
    await badge(page, 'succeeded').waitFor();
    assert.deepEqual(b.problems, []);
    await page.close();
  });

  it('a refused start says why, in the dialog', async () => {
    const page = await b.tab();
    await signIn(page, h.url, 'ada@runs.test');
    await page.getByRole('button', { name: 'Start a run' }).click();
    const dialog = page.getByRole('dialog', { name: 'Start a run' });
    await dialog.locator('select[name="name"]').selectOption('greet');
    await dialog.getByText('More options').click();
    await dialog.getByLabel(/Reviewers/).fill('hello: nobody-by-this-name');
    await dialog.getByRole('button', { name: 'Start run' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'nobody-by-this-name' }).waitFor();
    assert.match(new URL(page.url()).hash, /^#\/runs$|^$/);
    await page.close();
  });

  it('a list that failed to load while its stream was open loads again by itself', async () => {
    const page = await b.tab();
    await signIn(page, h.url, 'ada@runs.test');
    await page.getByRole('button', { name: 'Start a run' }).waitFor();
    // The inbox's first load fails, answered only once the realm's stream is open: no change may
    // ever come through the stream to load it again.
    const streamOpen = page.waitForResponse((r) =>
      /\/v1\/realms\/[^/]+\/events$/.test(new URL(r.url()).pathname),
    );
    let refused = 0;
    await page.route('**/v1/reviews/list', async (route) => {
      if (refused > 0) return route.continue();
      refused++;
      await streamOpen;
      await route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ ok: false, error: { code: 'unavailable', message: 'try again' } }),
      });
    });
    await page.getByRole('link', { name: 'Reviews' }).click();
    await page.getByRole('alert').filter({ hasText: 'Could not load the reviews' }).waitFor();
    await page.getByText('Nothing waits for a review.').waitFor();
    assert.equal(await page.getByRole('alert').filter({ hasText: 'Could not load the reviews' }).count(), 0);
    assert.equal(refused, 1);
    await page.close();
  });

  it('a team not assigned to the chosen workspace is refused, saying how to assign it', async () => {
    // A workspace that appears after the team was allowed: nobody assigned the team to it.
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-ws-'));
    try {
      const ws = await h.ok('workspaces/register', { daemon_id: w.daemonId, path: dir, name: 'scratch' });
      assert.equal(ws.data.status, 'ready');
      const page = await b.tab();
      await signIn(page, h.url, 'ada@runs.test');
      await page.getByRole('button', { name: 'Start a run' }).click();
      const dialog = page.getByRole('dialog', { name: 'Start a run' });
      await dialog.locator('form[aria-busy="false"]').waitFor();
      await dialog.locator('select[name="name"]').selectOption('greet');
      await dialog.locator('select[name="workspace"]').selectOption(ws.data.id);
      await dialog.getByRole('button', { name: 'Start run' }).click();
      const alert = dialog.getByRole('alert').filter({ hasText: 'not assigned to workspace scratch' });
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? '', /svc workspaces assign-teams/);
      assert.equal((await h.ok('runs/list', { realm_id: w.realmId, name_contains: 'greet' })).data.length, 2);
      await page.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds runs by a text in the name, by who started them and by date', async () => {
    await h.ok('runs/new', {
      realm_id: w.realmId,
      team: 'greet',
      run_name: 'nightly sweep',
      inputs: { who: 'x' },
    });
    const page = await b.tab();
    await signIn(page, h.url, 'ada@runs.test');
    const rows = page.locator('table.runs tbody tr:not(.skeleton)');
    await page.getByRole('link', { name: 'nightly sweep' }).waitFor();
    // Started times show with their date.
    await page
      .locator('table.runs time', { hasText: /^\d{4}-\d{2}-\d{2} / })
      .first()
      .waitFor();

    await page.locator('input[name="q"]').fill('SWEEP');
    await page.locator('input[name="q"]').press('Enter');
    await page.waitForURL(/q=SWEEP/);
    await page.getByRole('link', { name: 'greet-1' }).waitFor({ state: 'detached' });
    // The filtered page loads after the old rows go (skeleton rows in between).
    await page.getByRole('link', { name: 'nightly sweep' }).waitFor();
    assert.equal(await rows.count(), 1);

    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByRole('link', { name: 'greet-1' }).waitFor();
    await page.locator('select[name="by"]').selectOption({ label: ada.handle });
    await page.getByRole('link', { name: 'nightly sweep' }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'greet-2' }).waitFor();
    assert.deepEqual((await page.locator('table.runs tbody td a').allTextContents()).sort(), [
      'greet-1',
      'greet-2',
    ]);

    // A day range that ended yesterday holds none of today's runs; the hash keeps the filters.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await page.locator('input[name="to"]').fill(yesterday);
    await page.getByText('No runs match these filters').waitFor();
    await page.reload();
    await page.getByText('No runs match these filters').waitFor();
    assert.equal(await page.locator('input[name="to"]').inputValue(), yesterday);
    assert.deepEqual(b.problems, []);
    await page.close();
  });

  it('the runs list of a busy realm loads about once a second, and shows every run as it ends', async () => {
    const page = await b.tab();
    await signIn(page, h.url, 'ada@runs.test');
    await page.getByRole('button', { name: 'Start a run' }).waitFor();
    const lists: number[] = [];
    page.on('request', (req) => {
      if (new URL(req.url()).pathname === '/v1/runs/list') lists.push(Date.now());
    });
    // Twenty runs at once: each moves through five states, a hundred changes in a few seconds.
    const t0 = Date.now();
    const ids = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const r = await h.ok(
          'runs/new',
          { realm_id: w.realmId, team: 'greet', run_name: `burst-${i}`, inputs: { who: `n${i}` } },
          ada.token,
        );
        return r.data.run_id as string;
      }),
    );
    for (const id of ids) await page.locator(`tr[data-run-id="${id}"] .badge.state-succeeded`).waitFor();
    const seconds = (Date.now() - t0) / 1000;
    // One load for the first change, then at most one a second (a load per change would be dozens).
    assert.ok(lists.length <= Math.ceil(seconds) + 2, `${lists.length} loads of the list in ${seconds} s`);
    await page.close();
  });
});
