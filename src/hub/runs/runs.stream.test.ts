import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import { post, type TestHub } from '../../../test/helpers/hub.js';
import { countingQueries, hubWithTeam } from '../../../test/helpers/runs.js';
import { closeOnline, onlineDaemon, type TunnelClient } from '../../../test/helpers/tunnel-client.js';
import type { World } from '../../../test/helpers/world.js';
import { followEvents, type StreamEvent, StreamRefused } from '../../shared/api/event-stream.js';
import { LOGGED, notifyRunLogged, runFeed } from '../cluster/bus.js';
import { inTx } from '../daemons/commands.js';
import type { OfferJobBody } from './dispatch.service.js';
import { addHistory, realmChangesQuery } from './history.repo.js';
import { loadRun } from './runs.repo.js';

describe('live updates: run and realm event streams', () => {
  let h: TestHub;
  let w: World;
  let d: TunnelClient;
  before(async () => {
    // Changes must be pushed to the streams: their fallback read would come only after an hour.
    ({ h, w } = await hubWithTeam('solo', { config: { streamPollMs: 3_600_000 } }));
    d = await onlineDaemon(h.running.hub, h.url, w.tokens.realm_token!);
  });
  after(async () => {
    await closeOnline(h.running.hub, d);
    await h.close();
  });

  /** Starts a run and plays its daemon: claimed, started; answers what the daemon calls with. */
  async function startedRun() {
    const runId: string = (
      await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' }, w.tokens.realm_member)
    ).data.run_id;
    const offer = await d.next('command', 15_000);
    d.ack(offer.tx_id);
    const { queue_item_id } = offer.body as OfferJobBody;
    const won = await h.ok('queue/claim', { queue_item_id, daemon_id: w.daemonId }, w.tokens.realm_token);
    const exec = await d.next('command', 15_000);
    d.ack(exec.tx_id);
    const epoch: number = won.data.run.lease_epoch;
    const as = w.tokens.realm_token;
    const report = (event: string, extra: Record<string, unknown> = {}) =>
      h.ok('runs/report', { run_id: runId, lease_epoch: epoch, event, ...extra }, as);
    const log = (...texts: string[]) =>
      h.ok(
        'runs/append_logs',
        { run_id: runId, lease_epoch: epoch, lines: texts.map((text) => ({ stream: 'stdout', text })) },
        as,
      );
    await report('started');
    return { runId, epoch, report, log };
  }

  const runStream = (runId: string) => `${h.url}/v1/runs/${runId}/events`;

  it('sends history, log lines and states, resumes after a drop without gaps or repeats, and ends with the run', async () => {
    const { runId, report, log } = await startedRun();
    await log('one', 'two');
    const seen: StreamEvent[] = [];
    // First connection: stop (as a dropped connection would) after the second log line.
    let lastId = '';
    await followEvents(runStream(runId), {
      token: w.tokens.realm_member,
      onEvent(e) {
        seen.push(e);
        lastId = e.id;
        return e.event === 'log' && (e.data as { text: string }).text === 'two';
      },
    });
    await log('three');
    await report('phase.started', { phase: 'only' });
    await report('phase.completed', { phase: 'only', outputs: {} });
    await report('succeeded');
    // Resumed from the last id: the rest, then the stream ends by itself after the final state.
    await followEvents(runStream(runId), {
      token: w.tokens.realm_member,
      lastEventId: lastId,
      onEvent(e) {
        seen.push(e);
        return false;
      },
    });
    const logs = seen
      .filter((e) => e.event === 'log')
      .map((e) => (e.data as { seq: number; text: string }).text);
    assert.deepEqual(logs, ['one', 'two', 'three']);
    const history = seen.filter((e) => e.event === 'history').map((e) => (e.data as { type: string }).type);
    const full = (await h.ok('runs/get_by_id', { run_id: runId, with_history: true })).data.history.map(
      (x: { type: string }) => x.type,
    );
    assert.deepEqual(history, full);
    const states = seen.filter((e) => e.event === 'state').map((e) => (e.data as { state: string }).state);
    assert.equal(states.at(-1), 'succeeded');
    assert.equal(seen.at(-1)?.event, 'state');
  });

  it('refuses with the hub error shape: no token, another org, unknown run, bad Last-Event-ID', async () => {
    const { runId, report } = await startedRun();
    const refused = async (url: string, token: string | null, lastEventId?: string) => {
      const err = await followEvents(url, {
        token,
        ...(lastEventId ? { lastEventId } : {}),
        onEvent: () => true,
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof StreamRefused, String(err));
      return [err.status, err.code];
    };
    assert.deepEqual(await refused(runStream(runId), null), [401, 'unauthorized']);
    assert.deepEqual(await refused(runStream(runId), w.tokens.outsider), [403, 'forbidden']);
    assert.deepEqual(
      await refused(runStream('01a00000-0000-7000-8000-000000000000'), w.tokens.realm_member),
      [404, 'not_found'],
    );
    assert.deepEqual(await refused(runStream(runId), w.tokens.realm_member, 'nonsense'), [
      400,
      'invalid_params',
    ]);
    assert.deepEqual(await refused(`${h.url}/v1/realms/${w.realmId}/events`, w.tokens.outsider), [
      403,
      'forbidden',
    ]);
    await report('succeeded');
  });

  it('a realm stream sends the state of every run of the realm that changes', async () => {
    const states: { run_id: string; state: string }[] = [];
    const controller = new AbortController();
    let first!: Awaited<ReturnType<typeof startedRun>>;
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const following = followEvents(`${h.url}/v1/realms/${w.realmId}/events`, {
      token: w.tokens.realm_member,
      signal: controller.signal,
      onOpen: () => opened(),
      onEvent(e) {
        states.push(e.data as { run_id: string; state: string });
        return states.some((s) => s.run_id === first?.runId && s.state === 'succeeded');
      },
    });
    // The stream is open once the hub answered its headers; a run started now is seen.
    await open;
    first = await startedRun();
    await first.report('succeeded');
    await following;
    controller.abort();
    const mine = states.filter((s) => s.run_id === first.runId).map((s) => s.state);
    assert.equal(mine.at(-1), 'succeeded');
  });

  it('a run’s log lines make its stream read the lines alone, and no realm stream read at all', async () => {
    const hub = h.running.hub;
    const { runId, report, log } = await startedRun();
    const controller = new AbortController();
    const realmStates: string[] = [];
    let realmOpened!: () => void;
    const realmOpen = new Promise<void>((resolve) => (realmOpened = resolve));
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const realm = followEvents(`${h.url}/v1/realms/${w.realmId}/events`, {
      token: w.tokens.realm_member,
      signal: controller.signal,
      onOpen: () => realmOpened(),
      onEvent(e) {
        const run = e.data as { run_id: string; state: string };
        if (run.run_id !== runId) return false;
        realmStates.push(run.state);
        if (run.state === 'succeeded') ended();
        return false;
      },
    });
    // The run's own stream shows when each batch of lines was told to the streams of this process.
    const waiting = new Map<string, () => void>();
    const shown = (text: string) => new Promise<void>((resolve) => waiting.set(text, resolve));
    let stateShown!: () => void;
    const firstState = new Promise<void>((resolve) => (stateShown = resolve));
    const runFollowed = followEvents(runStream(runId), {
      token: w.tokens.realm_member,
      signal: controller.signal,
      onEvent(e) {
        if (e.event === 'log') waiting.get((e.data as { text: string }).text)?.();
        if (e.event === 'state') stateShown();
        return false;
      },
    });
    // The streams' reads: of the realm's history, and of the run's history and row.
    const ofRealm = (q: { sql: string }) => /from "run_history"/.test(q.sql) && /"realm_id" = /.test(q.sql);
    const ofRun = (q: { sql: string }) =>
      /from "(run_history|runs)"/.test(q.sql) && /"run_id" = /.test(q.sql);
    try {
      await realmOpen;
      await firstState;
      const realmReads = await countingQueries(hub, ofRealm, async (reads) => {
        const runReads = await countingQueries(hub, ofRun, async (count) => {
          for (let batch = 0; batch < 10; batch++) {
            const line = shown(`line ${batch}`);
            await log(`line ${batch}`);
            await line;
          }
          return count();
        });
        assert.equal(runReads, 0, 'the run stream read the lines alone');
        await report('succeeded');
        await end;
        return reads();
      });
      assert.deepEqual(
        realmStates,
        ['succeeded'],
        'the realm stream sent the run’s end, nothing for its lines',
      );
      // The end's look, and at most one look at the window (made at least every second).
      assert.ok(
        realmReads <= 2,
        `${realmReads} reads of the realm's history for ten batches of lines and an end`,
      );
    } finally {
      controller.abort();
      await Promise.allSettled([realm, runFollowed]);
    }
  });

  it("tells a run's change with the history entry it wrote (on PostgreSQL once per transaction), its logs as such", async () => {
    const hub = h.running.hub;
    const postgres = hub.dialect === 'postgres';
    const { runId, report } = await startedRun();
    const run = (await loadRun(hub.db, runId))!;
    // Notices come in the order their transactions commit: the second transaction's comes last.
    const told: (string | undefined)[] = [];
    let logged!: () => void;
    const last = new Promise<void>((resolve) => (logged = resolve));
    let logs = 0;
    const onChange = (_realm: string, changed: string, what: string | undefined) => {
      if (changed !== runId) return;
      told.push(what);
      if (what === LOGGED && ++logs === (postgres ? 1 : 2)) logged();
    };
    runFeed.on('change', onChange);
    try {
      await inTx(hub, async (tx) => {
        await addHistory(tx.db, hub, run, 'running', { type: 'run.note' });
        await addHistory(tx.db, hub, run, 'running', { type: 'run.note' });
        await notifyRunLogged(tx.db, [run]);
      });
      await inTx(hub, (tx) => notifyRunLogged(tx.db, [run]));
      await last;
    } finally {
      runFeed.off('change', onChange);
    }
    const notes = (
      await hub.db
        .selectFrom('run_history')
        .select('id')
        .where('run_id', '=', runId)
        .where('type', '=', 'run.note')
        .orderBy('id')
        .execute()
    ).map((r) => r.id);
    assert.equal(notes.length, 2);
    // The run's start may still be told as the listening begins: only this test's notices count.
    const ours = told.filter((what) => what === LOGGED || notes.includes(what!));
    if (postgres) {
      assert.deepEqual(
        ours,
        [notes[0], LOGGED],
        'one notice per transaction: its first entry, then the logs',
      );
    } else {
      // SQLite tells each write as it is made, in this process: nothing to save there.
      assert.deepEqual(ours, [notes[0], notes[1], LOGGED, LOGGED]);
    }
    await report('succeeded');
  });

  it('a realm stream reads the changes after its cursor by an index, not by walking the realm’s runs', async (t) => {
    const hub = h.running.hub;
    if (hub.dialect !== 'sqlite') return t.skip('a query plan of SQLite');
    const compiled = realmChangesQuery(hub.db, w.realmId, '0', 500).compile();
    const plan = await hub.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
    );
    const details = plan.rows.map((r) => r.detail).join(' | ');
    assert.match(details, /USING (COVERING )?INDEX run_history_realm \(realm_id=\? AND id>\?\)/);
    assert.doesNotMatch(details, /\bruns\b|TEMP B-TREE/);
  });

  it('a change made through another hub process reaches the stream on this one at once', {
    skip: process.env.SVC_TEST_DB !== 'postgres' && 'several hub processes need PostgreSQL',
  }, async () => {
    const other = await h.startAnother({ config: { streamPollMs: 3_600_000 } });
    try {
      const { runId, epoch } = await startedRun();
      const states: string[] = [];
      let opened!: () => void;
      const open = new Promise<void>((resolve) => (opened = resolve));
      const following = followEvents(runStream(runId), {
        token: w.tokens.realm_member,
        onOpen: () => opened(),
        onEvent(e) {
          if (e.event === 'state') states.push((e.data as { state: string }).state);
          return false;
        },
      });
      await open;
      // Through the other process only: this one hears of it from PostgreSQL's notification.
      const r = await post(
        `${other.url}/v1/runs/report`,
        { run_id: runId, lease_epoch: epoch, event: 'succeeded' },
        w.tokens.realm_token,
      );
      assert.equal(r.body?.ok, true, JSON.stringify(r.body));
      await following; // the stream ends after the final state
      assert.equal(states.at(-1), 'succeeded');
    } finally {
      await other.close();
    }
  });

  it('a realm stream on PostgreSQL sends a change whose transaction commits after a later one was sent', {
    skip: process.env.SVC_TEST_DB !== 'postgres' && 'SQLite commits one transaction at a time',
  }, async () => {
    const hub = h.running.hub;
    const slow = await startedRun();
    const quick = await startedRun();
    const seen: { run_id: string; state: string }[] = [];
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    let sawSlow!: () => void;
    const slowSeen = new Promise<void>((resolve) => (sawSlow = resolve));
    let sawQuickEnd!: () => void;
    const quickEnded = new Promise<void>((resolve) => (sawQuickEnd = resolve));
    const controller = new AbortController();
    const following = followEvents(`${h.url}/v1/realms/${w.realmId}/events`, {
      token: w.tokens.realm_member,
      signal: controller.signal,
      onOpen: () => opened(),
      onEvent(e) {
        const run = e.data as { run_id: string; state: string };
        seen.push(run);
        if (run.run_id === slow.runId) sawSlow();
        if (run.run_id === quick.runId && run.state === 'succeeded') sawQuickEnd();
        return false;
      },
    });
    await open;
    // An entry of `slow` gets its id first, but its transaction commits last.
    let written!: () => void;
    const inserted = new Promise<void>((resolve) => (written = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const row = (await loadRun(hub.db, slow.runId))!;
    const late = hub.db.transaction().execute(async (trx) => {
      await addHistory(trx, hub, row, 'running', { type: 'run.note', actor: null });
      written();
      await held;
    });
    await inserted;
    await quick.report('succeeded');
    await quickEnded;
    release();
    await late;
    await slowSeen;
    controller.abort();
    await following.catch(() => {});
    assert.ok(seen.some((x) => x.run_id === slow.runId));
    await slow.report('succeeded');
  });
});

describe('live updates: changes close together are sent together', () => {
  let h: TestHub;
  let w: World;
  before(async () => {
    // A stream steps at most every 1.5 s here, and only a change wakes it.
    ({ h, w } = await hubWithTeam('solo', { config: { streamPollMs: 3_600_000, streamBatchMs: 1_500 } }));
  });
  after(() => h.close());

  it('a realm stream reads and sends the changes made within its batch time in one write', async () => {
    const chunks: string[] = [];
    const url = new URL(`${h.url}/v1/realms/${w.realmId}/events`);
    const req = http.get(url, { headers: { authorization: `Bearer ${w.tokens.realm_member}` } });
    const [res] = (await once(req, 'response')) as [http.IncomingMessage];
    assert.equal(res.statusCode, 200);
    res.setEncoding('utf8');
    // The stream's first step ran when it opened; three runs queued now, each in a commit of its
    // own, wake it three times within its batch time.
    const runIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      runIds.push(
        (await h.ok('runs/new', { realm_id: w.realmId, team: 'solo' }, w.tokens.realm_member)).data.run_id,
      );
    }
    const seen = (id: string) => chunks.some((c) => c.includes(`"run_id":"${id}"`));
    for await (const chunk of res) {
      if ((chunk as string).includes('event: state')) chunks.push(chunk as string);
      if (runIds.every(seen)) break;
    }
    req.destroy();
    assert.equal(chunks.length, 1, `the states came in ${chunks.length} writes`);
  });
});
