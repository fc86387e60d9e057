import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli, startCli } from '../helpers/cli.js';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp.js';

/**
 * The built CLI as `npm run build` makes it (scripts/build-cli.mjs: one CommonJS bundle, run by
 * bin/svc.js with V8's code cache beside it), built afresh into a folder of this test: `svc dev` runs
 * the example team through it, and its compiled code is kept, used, and replaced when unusable.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the built CLI', () => {
  let out: string;
  let cache: string;
  let devCache: string;
  let smtp: SmtpSink | undefined;

  before(() => {
    // Inside the tree, so that the bundle's packages resolve from node_modules above it.
    out = mkdtempSync(path.join(ROOT, '.test-bundle-'));
    for (const [script, dir] of [
      ['build-cli.mjs', out],
      ['build-console.mjs', path.join(out, 'console')],
    ] as const) {
      const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', script), dir], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    }
    cache = path.join(out, `cli.cjs.${process.version}-${process.arch}.cli.cache`);
    devCache = path.join(out, `cli.cjs.${process.version}-${process.arch}.dev.cache`);
  });
  after(async () => {
    await smtp?.close();
    rmSync(out, { recursive: true, force: true });
  });

  test('svc dev from the bundle runs the example team; its compiled code is kept and used', async () => {
    const cwd = mkdtempSync(path.join(out, 'dev-'));
    const env = {
      SVC_CLI_DIST: out,
      SVC_HUB_PORT: '0',
      SVC_DAEMON_PORT: '0',
      SVC_CONFIG_DIR: path.join(cwd, 'config'),
    };
    const dev = startCli(['dev'], { env, cwd });
    try {
      await dev.waitFor(/Press Ctrl-C to stop/);
      const printed = dev.stdout();
      const consoleUrl = /^\s+console\s+(http:\/\/\S+)/m.exec(printed)?.[1];
      const page = await fetch(consoleUrl!);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<title>svc console<\/title>/);
      const runLine = /^\s+(?:npx )?svc (runs start .+)$/m.exec(printed)?.[1];
      assert.ok(runLine, printed);
      const run = await runCli(runLine.split(/\s+/), {
        env: { SVC_CLI_DIST: env.SVC_CLI_DIST, SVC_CONFIG_DIR: env.SVC_CONFIG_DIR },
      });
      assert.equal(run.code, 0, run.stderr + run.stdout);
      assert.match(run.stdout + run.stderr, /hello-team-1: succeeded/);
    } finally {
      assert.equal(await dev.stop('SIGTERM'), 0, dev.stderr());
    }

    // The hub and daemon's run left the code it compiled, for the servers' next start; `runs start`
    // left one of the other commands', which a shorter command uses and keeps.
    const kept = statSync(devCache);
    assert.ok(kept.size > 100_000, `a cache of ${kept.size} bytes`);
    const commands = statSync(cache);
    assert.ok(commands.size < kept.size, `${commands.size} bytes for runs start, ${kept.size} for dev`);
    const help = await runCli(['--help'], { env: { SVC_CLI_DIST: out } });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /Servers:\n\s+daemon\s/);
    assert.equal(statSync(cache).mtimeMs, commands.mtimeMs);
    assert.equal(statSync(devCache).mtimeMs, kept.mtimeMs);

    // A cache V8 refuses (another build, or damaged) is replaced, and the command runs all the same.
    writeFileSync(cache, 'not compiled code');
    const again = await runCli(['--help'], { env: { SVC_CLI_DIST: out } });
    assert.equal(again.code, 0, again.stderr);
    assert.notEqual(readFileSync(cache, 'utf8').slice(0, 17), 'not compiled code');
    assert.ok(statSync(cache).size > 10_000);

    // A bundle changed after its cache was written, to the same length (which is all V8 checks),
    // runs its new code, not the cached old one.
    const bundle = path.join(out, 'cli.cjs');
    const text = readFileSync(bundle, 'utf8');
    const line = 'svc: workflow hub, local daemon and API client';
    assert.ok(text.includes(line));
    writeFileSync(bundle, text.replace(line, line.replace('local', 'LOCAL')));
    const changed = await runCli(['--help'], { env: { SVC_CLI_DIST: out } });
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(changed.stdout, /workflow hub, LOCAL daemon/);
  });

  test('a hub from the bundle sends e-mail through nodemailer, which stays outside it', async () => {
    // What no start reads stays out of the bundle: nodemailer, and zod's messages in other languages.
    const text = readFileSync(path.join(out, 'cli.cjs'), 'latin1');
    assert.match(text, /zod[\\/]v4[\\/]locales[\\/]en\.js/);
    assert.doesNotMatch(text, /zod[\\/]v4[\\/]locales[\\/]fr\.js|nodemailer[\\/]lib[\\/]/);
    smtp = await startSmtpSink();
    const mail = smtp.next();
    const cwd = mkdtempSync(path.join(out, 'hub-'));
    const token = 'svc_tok_bundle-mail-admin-0001';
    const hub = startCli(['hub'], {
      cwd,
      env: {
        SVC_CLI_DIST: out,
        SVC_HUB_PORT: '0',
        SVC_HOME: path.join(cwd, 'home'),
        SVC_DATABASE_URL: path.join(cwd, 'hub.db'),
        SVC_ADMIN_TOKEN: token,
        SVC_SMTP_URL: smtp.url,
      },
    });
    try {
      const ready = JSON.parse((await hub.waitFor(/^\{.*"hub ready".*\}$/m))[0]) as { url: string };
      const res = await fetch(`${ready.url}/v1/orgs/new`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ slug: 'mailed', owner: { email: 'boss@mailed.test' } }),
      });
      const body = (await res.json()) as { data: { owner_invite: { code: string; email_sent: boolean } } };
      assert.ok(res.ok, JSON.stringify(body));
      assert.equal(body.data.owner_invite.email_sent, true);
      assert.ok(
        (await mail).raw.includes(body.data.owner_invite.code),
        'the e-mail carries the invitation code',
      );
    } finally {
      assert.equal(await hub.stop('SIGTERM'), 0, hub.stderr());
    }
  });
});
