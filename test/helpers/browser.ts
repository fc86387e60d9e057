import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * The console's browser tests: headless Chromium from Debian's `chromium` package, driven by
 * playwright-core. Every tab records what must never happen (page errors, console errors other than
 * refused API calls, failing console files); a test asserts `problems` is empty at its end.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const BROWSER_SKIP = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (apt-get install chromium); CI installs it`;
export const PASSWORD = 'correct horse battery';
export const WAIT = 30_000;

export interface TestBrowser {
  context: BrowserContext;
  problems: string[];
  /** Paths the pages requested, in order. */
  requested: string[];
  /** A new tab (its own sessionStorage, so its own session). */
  tab(): Promise<Page>;
  close(): Promise<void>;
}

export async function openBrowser(viewport = { width: 1280, height: 900 }): Promise<TestBrowser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'svc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
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
    viewport,
    deviceScaleFactor: 1,
    colorScheme: 'light',
    timezoneId: 'UTC',
    locale: 'en-US',
  });
  context.setDefaultTimeout(WAIT);
  const problems: string[] = [];
  const requested: string[] = [];
  return {
    context,
    problems,
    requested,
    async tab() {
      const page = await context.newPage();
      page.on('console', (m) => {
        // The browser logs every refused API call (403 for what the user may not see); those are fine.
        const apiRefusal =
          m.text().startsWith('Failed to load resource') && m.location().url.includes('/v1/');
        if (m.type() === 'error' && !apiRefusal) problems.push(`console: ${m.text()}`);
      });
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
      page.on('request', (req) => requested.push(new URL(req.url()).pathname));
      page.on('response', (res) => {
        // The API's refusals are part of the tests; the console's own files must never fail.
        if (res.status() >= 400 && !new URL(res.url()).pathname.startsWith('/v1/'))
          problems.push(`HTTP ${res.status()} for ${res.url()}`);
      });
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in through the page, by keyboard: e-mail, Tab, password, Enter. */
export async function signIn(page: Page, url: string, email: string, hash = ''): Promise<void> {
  await page.goto(`${url}/${hash}`);
  await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  await page.getByLabel('E-mail').focus();
  await page.keyboard.type(email);
  await page.keyboard.press('Tab');
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press('Enter');
  // Signed in: the form is gone. If it stays, say what it answered rather than time out later.
  await page
    .getByRole('heading', { name: 'Sign in to svc' })
    .waitFor({ state: 'detached' })
    .catch(async (err: Error) => {
      const said = await page
        .getByRole('alert')
        .allInnerTexts()
        .catch(() => []);
      throw new Error(
        `signing in as ${email} stayed on the form: ${said.join(' / ') || 'no alert'}; ${err.message}`,
      );
    });
}
