import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Database, openDatabase } from '../../src/db/index.js';
import type { ScheduleSlotsTable } from '../../src/db/schema.js';
import { mintToken } from '../../src/shared/tokens.js';
import { killChildren, type LongRunning, startCli } from '../helpers/cli.js';
import { testDatabase } from '../helpers/db.js';
import { post } from '../helpers/hub.js';
import { until } from '../helpers/until.js';
import { freePort } from './daemon-harness.js';

const GRACE_MS = 4000;

/**
 * A real `svc hub` process with three every-second schedules (catch_up none, latest, all) is killed
 * with SIGKILL and started again some seconds later. The times it was down for were missed; when it
 * is back, each schedule catches up per its policy, and no time fires twice. Overlap
 * cancel_previous with no daemon: every fired time has a run of its own.
 */
describe('schedules catch up after a hub was killed (SIGKILL)', () => {
  const tdb = testDatabase();
  const svcHome = mkdtempSync(path.join(tmpdir(), 'svc-sched-'));
  const adminToken = mintToken('user');
  let url = '';
  let env: Record<string, string> = {};
  let hub: LongRunning | undefined;
  let own: Database;

  const startHub = async () => {
    hub = startCli(['hub'], { env });
    await hub.waitFor(/"msg":"hub ready"/);
  };
  before(async () => {
    own = await openDatabase({ url: tdb.url, ...(tdb.schema ? { schema: tdb.schema } : {}) });
    const databaseUrl = tdb.schema
      ? `${tdb.url}${tdb.url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${tdb.schema}`)}`
      : tdb.url;
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      SVC_HOME: svcHome,
      SVC_DATABASE_URL: databaseUrl,
      SVC_HUB_PORT: String(port),
      SVC_ADMIN_TOKEN: adminToken,
      SVC_LOG_LEVEL: 'info',
      SVC_SCHEDULE_GRACE_MS: String(GRACE_MS),
    };
    await startHub();
  });
  after(async () => {
    await hub?.stop('SIGTERM');
    await killChildren();
    await own?.close();
    await tdb.cleanup();
    rmSync(svcHome, { recursive: true, force: true });
  });

  const ok = async (op: string, body: unknown) => {
    const r = await post(`${url}/v1/${op}`, body, adminToken);
    assert.equal(r.body?.ok, true, `${op}: ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  const slotsOf = (id: string): Promise<ScheduleSlotsTable[]> =>
    own.db
      .selectFrom('schedule_slots')
      .selectAll()
      .where('schedule_id', '=', id)
      .orderBy('slot_at')
      .execute();
  /** The gaps (more than one second) between consecutive fired times. */
  const gaps = (slots: ScheduleSlotsTable[]) =>
    slots.slice(1).filter((s, i) => s.slot_at - slots[i]!.slot_at !== 1000);
  const caught = (slots: ScheduleSlotsTable[]) => slots.filter((s) => s.caught_up === 1);

  it('none skips the missed times, latest runs the newest one, all runs each', {
    timeout: 120_000,
  }, async () => {
    const org = await ok('orgs/new', { slug: 'sched', owner: { email: 'owner@sched.test' } });
    const realmId: string = (await ok('realms/list', { org_id: org.org.id }))[0].id;
    await ok('agents/register', {
      org_id: org.org.id,
      manifest: { name: 'tick', version: '1.0.0', agent_type: 'exec', command: ['true'] },
    });
    const ids: Record<string, string> = {};
    for (const catchUp of ['none', 'latest', 'all']) {
      ids[catchUp] = (
        await ok('schedules/new', {
          realm_id: realmId,
          agent: 'tick',
          cron: '* * * * * *',
          overlap: 'cancel_previous',
          catch_up: catchUp,
        })
      ).id;
    }
    const fired = async (n: number, after = 0) => {
      for (const id of Object.values(ids)) {
        if ((await slotsOf(id)).filter((s) => s.slot_at > after).length < n) return false;
      }
      return true;
    };
    await until('two fired times of each schedule', () => fired(2), 30_000);
    await hub!.stop('SIGKILL');
    const killedAt = Date.now();
    // The hub stays down across several scheduled times (the downtime under test, not a wait for an event).
    await new Promise((r) => setTimeout(r, GRACE_MS + 3000));
    await startHub();
    await until('two fired times after the restart', () => fired(2, killedAt + GRACE_MS + 3000), 30_000);
    for (const id of Object.values(ids)) await ok('schedules/update', { id, enabled: false });

    const none = await slotsOf(ids.none!);
    const latest = await slotsOf(ids.latest!);
    const all = await slotsOf(ids.all!);
    // Every fired time has its own run, once.
    for (const slots of [none, latest, all]) {
      assert.ok(slots.every((s) => s.status === 'started' && s.run_id));
      const runs = await own.db
        .selectFrom('runs')
        .select('external_id')
        .where(
          'run_id',
          'in',
          slots.map((s) => s.run_id!),
        )
        .execute();
      assert.equal(new Set(runs.map((r) => r.external_id)).size, slots.length);
    }
    // none: the missed times were skipped (a gap), none ran late.
    assert.ok(gaps(none).length >= 1, JSON.stringify(none));
    assert.equal(caught(none).length, 0, JSON.stringify(none));
    // latest: the newest missed time alone ran late, right after the gap.
    assert.equal(caught(latest).length, 1, JSON.stringify(latest));
    assert.equal(gaps(latest)[0], caught(latest)[0], JSON.stringify(latest));
    // all: no gap; the missed times ran late, each once.
    assert.equal(gaps(all).length, 0, JSON.stringify(all));
    assert.ok(caught(all).length >= 3, JSON.stringify(all));
  });
});
