import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { runCli } from '../helpers/cli.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { agentDir, registerAgent, registerTeam, waitForRun } from '../helpers/runs.js';
import { addOrgUser, buildWorld, type World } from '../helpers/world.js';
import { daemonHome, startTestDaemon, whenConnected } from './daemon-harness.js';

/**
 * The web console in a real browser (headless Chromium from Debian's `chromium` package, driven by
 * playwright-core) against a real hub, daemon and agents, with runs started by the real `svc` CLI.
 * Every wait is on a page condition (Playwright locators), never a fixed sleep.
 * SVC_CONSOLE_SCREENSHOT=1 saves the run page to docs/console-run.png (the README's picture).
 */
const CHROMIUM = '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (apt-get install chromium); CI installs it`;
const SCREENSHOT = process.env.SVC_CONSOLE_SCREENSHOT
  ? fileURLToPath(new URL('../../docs/console-run.png', import.meta.url))
  : null;
const PASSWORD = 'correct horse battery';
const WAIT = 30_000;

describe('web console in headless Chromium', { skip: SKIP }, () => {
  let h: TestHub;
  let w: World;
  let d: RunningDaemon;
  let browser: BrowserContext;
  let ada: { id: string; handle: string; token: string; email: string };
  let vic: { id: string; handle: string; token: string; email: string };
  const home = daemonHome();
  const agents = agentDir();
  const profile = mkdtempSync(path.join(tmpdir(), 'svc-chromium-'));
  const problems: string[] = [];
  /** Paths the console's pages requested, in order. */
  const requested: string[] = [];

  before(async () => {
    h = await startTestHub();
    w = await buildWorld(h);
    d = await startTestDaemon(home.dir, {
      config: { hubUrls: [h.url], realmToken: w.tokens.realm_token! },
      runner: { logFlushMs: 50 },
    });
    await whenConnected(d);
    // Ada runs the realm (admin); Vic only watches (member).
    const a = await addOrgUser(h, w.orgId, 'ada@console.test', 'member');
    const v = await addOrgUser(h, w.orgId, 'vic@console.test', 'member');
    ada = { ...a, email: 'ada@console.test' };
    vic = { ...v, email: 'vic@console.test' };
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: a.id,
      role: 'admin',
    });
    await h.ok('realms/add_member', {
      realm_id: w.realmId,
      member_type: 'user',
      member_id: v.id,
      role: 'member',
    });

    const writer = agents.write(
      'writer',
      `const inputs = JSON.parse(process.env.SVC_INPUTS);
for (const step of ['outline', 'first draft', 'polish']) console.log('drafting ' + inputs.topic + ': ' + step);
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ summary: 'An essay about ' + inputs.topic }));`,
    );
    const worker = agents.write(
      'worker',
      `const inputs = JSON.parse(process.env.SVC_INPUTS);
console.log('checking ' + inputs.item.key);
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ checked: inputs.item.key }));`,
    );
    const publisher = agents.write(
      'publisher',
      `console.log('published');
require('fs').writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ url: 'https://example.test/essay' }));`,
    );
    await registerAgent(h, w.orgId, 'writer', writer);
    await registerAgent(h, w.orgId, 'worker', worker);
    await registerAgent(h, w.orgId, 'publisher', publisher);
    await registerTeam(h, w.orgId, 'fact-check', [{ name: 'check', agent: 'worker' }]);
    await registerTeam(h, w.orgId, 'essay', [
      { name: 'draft', agent: 'writer', review: true },
      { name: 'check', team: 'fact-check', foreach: 'inputs.sources' },
      { name: 'publish', agent: 'publisher' },
    ]);

    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
      viewport: { width: 1280, height: 900 },
      deviceScaleFactor: 1,
      colorScheme: 'light',
      timezoneId: 'UTC',
      locale: 'en-US',
    });
    browser.setDefaultTimeout(WAIT);
  });

  after(async () => {
    await browser?.close();
    await d?.close();
    await h?.close();
    home.cleanup();
    agents.cleanup();
    rmSync(profile, { recursive: true, force: true });
  });

  /** A new tab (its own sessionStorage, so its own session) that records CSP violations and errors. */
  async function tab(): Promise<Page> {
    const page = await browser.newPage();
    page.on('console', (m) => {
      // The browser logs every refused API call (403 for what the user may not see); those are fine.
      const apiRefusal = m.text().startsWith('Failed to load resource') && m.location().url.includes('/v1/');
      if (m.type() === 'error' && !apiRefusal) problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('request', (req) => requested.push(new URL(req.url()).pathname));
    page.on('response', (res) => {
      // The API's refusals are part of the test; the console's own files must never fail.
      if (res.status() >= 400 && !new URL(res.url()).pathname.startsWith('/v1/')) {
        problems.push(`HTTP ${res.status()} for ${res.url()}`);
      }
    });
    return page;
  }

  async function signIn(page: Page, who: { email: string }, hash = '') {
    await page.goto(`${h.url}/${hash}`);
    await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    // By keyboard: e-mail, Tab, password, Enter.
    await page.getByLabel('E-mail').focus();
    await page.keyboard.type(who.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
  }

  async function startRun(name: string, token: string): Promise<string> {
    const r = await runCli(
      [
        '--json',
        'runs',
        'start',
        'essay',
        '--realm',
        w.realmId,
        '--name',
        name,
        '--input',
        'topic=otters',
        '--input',
        'sources=[{"key":"encyclopedia"},{"key":"field-notes"}]',
      ],
      { env: { SVC_HUB_URL: h.url, SVC_TOKEN: token, SVC_HOME: home.dir } },
    );
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout).data.run_id as string;
  }

  /**
   * Waits for `text` on the page; when it never comes, the failure says what the page showed and
   * which API calls it made last, with their statuses.
   */
  async function showsText(page: Page, text: string) {
    const calls: string[] = [];
    const record = (res: { url(): string; status(): number }) => {
      const url = new URL(res.url());
      if (url.pathname.startsWith('/v1/')) calls.push(`${res.status()} ${url.pathname}`);
    };
    page.on('response', record);
    try {
      await page.getByText(text).waitFor();
    } catch (err) {
      const shown = await page
        .locator('main')
        .innerText({ timeout: 1000 })
        .catch(() => '(no main)');
      throw new Error(
        `"${text}" never showed at ${page.url()}; the page showed:\n${shown}\nAPI calls since: ${calls.slice(-20).join(', ') || 'none'}\n${(err as Error).message}`,
      );
    } finally {
      page.off('response', record);
    }
  }

  // Browser-side expressions are strings: this project's TypeScript has no DOM library.
  const focused = (page: Page, prop: 'id' | 'textContent') =>
    page.evaluate<string | null>(`document.activeElement?.${prop} ?? null`);
  const badge = (page: Page, state: string) => page.locator(`.page-head .badge.state-${state}`);

  it('sign in, a run started from the CLI reaches a review, approved in the page, succeeds', async () => {
    const page = await tab();
    await signIn(page, ada);
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await page.locator('.scope .role', { hasText: 'admin' }).waitFor();

    // After a navigation the page's title has the focus; on a fresh load the skip button comes first.
    assert.equal(await focused(page, 'id'), 'page-title');
    await page.reload();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await focused(page, 'textContent'), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await focused(page, 'id'), 'main');

    const runId = await startRun('Otter essay', ada.token);
    // The list refreshes by itself (every 3 s) and shows the new run.
    const link = page.getByRole('link', { name: 'Otter essay' });
    await link.waitFor();
    await link.click();
    await page.waitForURL(`**/#/runs/${runId}`);
    await page.getByRole('heading', { name: 'Otter essay', level: 1 }).waitFor();

    // The run waits for a review of its draft; the page shows it with the verdict buttons.
    await badge(page, 'awaiting_input').waitFor();
    await page.getByRole('heading', { name: 'Waiting for review' }).waitFor();
    await page.locator('.phase-review .phase-name', { hasText: 'draft' }).waitFor();
    await page.locator('.logs', { hasText: 'drafting otters: polish' }).waitFor();
    // The review card gives the agent's summary, the phase's last log lines and a link to its logs.
    const card = page.locator('.run-reviews .review');
    await card.locator('.summary', { hasText: 'An essay about otters' }).waitFor();
    await card.locator('.review-log', { hasText: 'drafting otters: polish' }).waitFor();
    await card.getByText('operators and admins of the realm').waitFor();
    const phaseLogs = card.getByRole('link', { name: 'Full log of phase draft' });
    assert.equal(await phaseLogs.getAttribute('href'), `#/runs/${runId}?phase=draft`);
    // Ada may cancel; force-terminate is explained instead of offered (the daemon holds the run).
    await page.getByRole('button', { name: 'Cancel run' }).waitFor();
    await page.getByText('Force terminate is not available: its daemon is online').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Force terminate' }).count(), 0);

    await page.getByLabel('Comment').fill('Lovely, ship it.');
    await page.getByRole('button', { name: 'Approve' }).click();

    // The run goes on: the child runs of the foreach phase, then publish, then succeeded.
    await badge(page, 'succeeded').waitFor();
    await page.locator('table.tree tr', { hasText: 'encyclopedia' }).waitFor();
    await page.locator('table.tree tr', { hasText: 'field-notes' }).waitFor();
    assert.equal(await page.locator('table.tree .badge.state-succeeded').count(), 2);
    for (const phase of ['draft', 'check', 'publish']) {
      await page.locator('.phase-succeeded .phase-name', { hasText: phase }).waitFor();
    }
    await page.locator('table.history tr', { hasText: 'Lovely, ship it.' }).waitFor();
    await page.locator('.logs', { hasText: 'published' }).waitFor();
    await page.getByText('Waiting for review').waitFor({ state: 'detached' });
    // The page followed the run's event stream (pushed changes), not a poll every second.
    assert.ok(requested.includes(`/v1/runs/${runId}/events`), requested.join(' '));
    // Nothing left to do on a succeeded run.
    for (const name of ['Cancel run', 'Resume', 'Force terminate']) {
      assert.equal(await page.getByRole('button', { name }).count(), 0, name);
    }
    const run = await waitForRun(h, runId, (r) => r.state === 'succeeded');
    assert.deepEqual(run.outputs.publish, { url: 'https://example.test/essay' });

    await page.locator('.logs').evaluate('(el) => el.scrollTo(0, 0)');
    const shot = await page.screenshot({ fullPage: true, ...(SCREENSHOT ? { path: SCREENSHOT } : {}) });
    assert.ok(shot.length > 10_000);

    // Readable at a phone's width: nothing wider than the screen outside the scrolling tables.
    await page.setViewportSize({ width: 375, height: 800 });
    await page.getByRole('heading', { name: 'Otter essay', level: 1 }).waitFor();
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `the run page overflows by ${overflow}px at 375px`);
    await page.close();
  });

  it('a realm member sees no controls and no verdict buttons, and the API refuses them', async () => {
    const runId = await startRun('Second essay', ada.token);
    // Polls the API until the run's review is open (a bounded loop on a real condition).
    const review = await (async () => {
      const deadline = Date.now() + WAIT;
      while (Date.now() < deadline) {
        const list = await h.ok('reviews/list', { realm_id: w.realmId, run_id: runId }, ada.token);
        if (list.data[0]) return list.data[0];
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`run ${runId} never asked for a review`);
    })();

    const page = await tab();
    await signIn(page, vic, `#/runs/${runId}`);
    // Back on the page asked for, once signed in.
    await page.getByRole('heading', { name: 'Second essay', level: 1 }).waitFor();
    await badge(page, 'awaiting_input').waitFor();
    await page.getByText('Your role in this realm (member) can view this run but not cancel').waitFor();
    for (const name of ['Cancel run', 'Resume', 'Force terminate', 'Approve', 'Reject']) {
      assert.equal(await page.getByRole('button', { name }).count(), 0, name);
    }
    // The reviews inbox shows Vic nothing to decide either.
    await page.getByRole('link', { name: 'Reviews' }).click();
    await showsText(page, 'Nothing waits for a review.');

    const cancel = await h.call('runs/cancel', { run_id: runId }, vic.token);
    assert.equal(cancel.status, 403);
    assert.equal(cancel.body.error.code, 'forbidden');
    const terminate = await h.call('runs/force_terminate', { run_id: runId, reason: 'x' }, vic.token);
    assert.equal(terminate.status, 403);
    const approve = await h.call('reviews/submit', { review_id: review.id, action: 'approve' }, vic.token);
    assert.equal(approve.status, 403);
    assert.equal((await h.ok('runs/get_by_id', { run_id: runId })).data.state, 'awaiting_input');

    // Vic signs out; the token is revoked.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    await page.close();

    // Ada cancels it from the page, through the confirmation dialog.
    const admin = await tab();
    await signIn(admin, ada, `#/runs/${runId}`);
    await badge(admin, 'awaiting_input').waitFor();
    await admin.getByRole('button', { name: 'Cancel run' }).click();
    const dialog = admin.getByRole('dialog', { name: 'Cancel this run?' });
    await dialog.getByLabel('Reason').fill('not needed');
    await dialog.getByRole('button', { name: 'Cancel run' }).click();
    await badge(admin, 'cancelled').waitFor();
    await admin.getByRole('button', { name: 'Resume' }).waitFor();
    await admin.locator('table.history tr', { hasText: 'run.cancel_requested' }).waitFor();

    // The other pages render for Ada: reviews (all), daemons, catalog, channels.
    await admin.getByRole('link', { name: 'Reviews' }).click();
    await admin.getByRole('link', { name: 'All' }).click();
    await admin
      .locator('.review', { hasText: 'Otter essay' })
      .getByText(/^Approved by \S+ · \d{4}-\d\d-\d\d \d\d:\d\d$/)
      .waitFor();
    await admin.getByRole('link', { name: 'Daemons' }).click();
    await admin.locator('.daemon .badge.status-online').waitFor();
    await admin.locator('.daemon .chips li', { hasText: 'essay@1.0.0' }).waitFor();
    await admin.getByRole('link', { name: 'Catalog' }).click();
    await admin.getByRole('heading', { name: 'essay', exact: true }).waitFor();
    await admin.getByRole('cell', { name: 'writer' }).waitFor();
    await admin.getByRole('link', { name: 'Channels' }).click();
    await admin.getByRole('heading', { name: 'Notification channels' }).waitFor();

    // Schedules: a schedule's "Run now" starts a run and the page links it; a trigger shows its URL.
    await h.ok('schedules/new', {
      realm_id: w.realmId,
      team: 'essay',
      cron: '0 0 1 1 *',
      timezone: 'Europe/Paris',
    });
    const hook = (await h.ok('triggers/new', { realm_id: w.realmId, name: 'pushes', team: 'essay' })).data;
    await admin.getByRole('link', { name: 'Schedules' }).click();
    await admin.getByRole('cell', { name: '0 0 1 1 * Europe/Paris' }).waitFor();
    await admin.getByRole('button', { name: 'Run now' }).click();
    await admin.locator('table.schedules a[href^="#/runs/"]').waitFor();
    await admin.getByText(hook.url).waitFor();
    await admin.close();

    assert.deepEqual(problems, [], 'no CSP violation, script error or failed file');
  });

  it('the reviews inbox shows a review as it opens and drops it once decided, from the realm stream', async () => {
    const page = await tab();
    await signIn(page, ada, '#/reviews');
    await page.getByRole('link', { name: 'Open', exact: true }).waitFor();
    const runId = await startRun('Third essay', ada.token);
    const card = page.locator('.review', { hasText: 'Third essay' });
    await card.locator('.summary', { hasText: 'An essay about otters' }).waitFor();
    const open = await h.ok('reviews/list', { realm_id: w.realmId, run_id: runId, state: 'open' }, ada.token);
    await h.ok('reviews/submit', { review_id: open.data[0].id, action: 'approve' }, ada.token);
    await card.waitFor({ state: 'detached' });
    await waitForRun(h, runId, (r) => r.state === 'succeeded');
    await page.close();
    assert.deepEqual(problems, [], 'no CSP violation, script error or failed file');
  });

  it('a run page follows a working run through its stream, with a handful of requests', async () => {
    // The agent works in two halves, each waiting for the test: ten log lines, one every 200 ms (each
    // its own change for the page), then ten more and its output.
    const first = path.join(agents.dir, 'ticker.first');
    const second = path.join(agents.dir, 'ticker.second');
    const ticker = agents.write(
      'ticker',
      `const fs = require('fs');
const after = (file, then) => (fs.existsSync(file) ? then() : setTimeout(() => after(file, then), 20));
const work = (n) => {
  if (n > 20) return fs.writeFileSync(process.env.SVC_OUTPUT, JSON.stringify({ ticks: 20 }));
  console.log('tick ' + n);
  setTimeout(() => (n === 10 ? after(${JSON.stringify(second)}, () => work(11)) : work(n + 1)), 200);
};
after(${JSON.stringify(first)}, () => work(1));`,
    );
    await registerAgent(h, w.orgId, 'ticker', ticker);
    await registerTeam(h, w.orgId, 'ticking', [{ name: 'tick', agent: 'ticker' }]);
    const runId = (
      await h.ok('runs/new', { realm_id: w.realmId, team: 'ticking', run_name: 'Ticks' }, ada.token)
    ).data.run_id as string;

    const page = await tab();
    await signIn(page, ada, `#/runs/${runId}`);
    await page.getByRole('heading', { name: 'Ticks', level: 1 }).waitFor();
    await badge(page, 'running').waitFor();
    // From here the page learns of every change from the run's event stream: it asks for little.
    const during: string[] = [];
    const record = (req: { url(): string }) => {
      const p = new URL(req.url()).pathname;
      if (p.startsWith('/v1/')) during.push(p);
    };
    page.on('request', record);
    writeFileSync(first, '');
    // The lines show as they come, while the run works.
    await page.locator('.logs', { hasText: 'tick 10' }).waitFor();
    assert.equal(await badge(page, 'running').count(), 1);
    writeFileSync(second, '');
    await badge(page, 'succeeded').waitFor();
    await page.locator('.logs', { hasText: 'tick 20' }).waitFor();
    page.off('request', record);
    const shown = (await page.locator('.logs').innerText()).split('\n');
    for (let n = 1; n <= 20; n++) {
      assert.equal(shown.filter((l) => l.endsWith(`tick ${n}`)).length, 1, `tick ${n} once`);
    }
    // Each part of the page read again on a few of the run's changes and once as it ended: about a
    // dozen requests in all. One that read again on every pushed change would have asked twenty
    // times for each part; one that polled every second, five times for the run and its logs.
    const times = new Map<string, number>();
    for (const p of during) times.set(p, (times.get(p) ?? 0) + 1);
    const seen = during.join(', ');
    assert.ok(during.length <= 16, `requests while the run worked: ${seen}`);
    for (const [p, n] of times) assert.ok(n <= 4, `${p} asked ${n} times: ${seen}`);
    assert.ok((times.get('/v1/runs/logs') ?? 0) <= 2, `the logs came with the stream: ${seen}`);
    await page.close();
    assert.deepEqual(problems, [], 'no CSP violation, script error or failed file');
  });
});
