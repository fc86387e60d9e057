import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isPostgres } from '../../db/index.js';
import type { RunHistoryTable, RunsTable } from '../../db/schema.js';
import { together } from '../../db/together.js';
import { isTerminal } from '../../shared/api/run-states.js';
import { AppError } from '../../shared/errors.js';
import { requireRealm } from '../access/access.service.js';
import { authenticate } from '../auth/authenticate.js';
import { LOGGED, type RunChange, runFeed } from '../cluster/bus.js';
import type { Hub } from '../context.js';
import {
  historyAfterQuery,
  historyEntries,
  realmChangesAfter,
  realmChangesWithRuns,
} from './history.repo.js';
import { logLinesAfter } from './logs.repo.js';
import { showRun, visibleRun } from './read.service.js';
import { realmChanges, SETTLE_MS } from './realm-changes.js';
import { runByIdQuery } from './run-read.repo.js';
import { loadRuns } from './runs.repo.js';

/**
 * Live updates as server-sent events (CONTRACT.md §14):
 *   GET /v1/runs/<run_id>/events     — `state` (the Run), `history` (one entry), `log` (one line)
 *   GET /v1/realms/<realm_id>/events — `state` of every run of the realm that changes
 * Each stream reads the database when its run (or realm) changes, on whichever hub process the change
 * was made (`runFeed`, src/hub/cluster/bus.ts), and at least every `streamPollMs` in case a
 * notification was lost; a realm stream only for history entries it has not read (realm-changes.ts),
 * not for log lines; it sends only what is new, and the changes of the `streamBatchMs` after a
 * step together. Event ids are cursors: a client that reconnects with `Last-Event-ID` gets what came
 * after, without gaps or repeats.
 */

const KEEPALIVE_MS = 15_000;
const BATCH = 500;
const runParams = z.object({ run_id: z.string().min(1).max(100) });
const realmParams = z.object({ realm_id: z.string().min(1).max(100) });

/** A run stream's position: the last log line and history entry sent. */
interface RunCursor {
  log: number;
  history: string;
}
const encodeRunCursor = (c: RunCursor) => `${c.log}.${c.history}`;
function decodeRunCursor(id: string | undefined): RunCursor {
  const m = id ? /^(\d{1,15})\.([0-9a-f-]{0,36})$/.exec(id) : null;
  if (id && !m) throw new AppError('invalid_params', 'Last-Event-ID is not an event id of this stream');
  return m ? { log: Number(m[1]), history: m[2]! } : { log: 0, history: '' };
}

export function registerRunStreams(app: FastifyInstance, hub: Hub): void {
  // Streams that are open, ended when the hub closes.
  const open = new Set<Stream>();
  const timing = { pollMs: hub.config.streamPollMs, batchMs: hub.config.streamBatchMs };
  app.get('/v1/runs/:run_id/events', async (req, reply) => {
    const { run_id } = parse(runParams, req.params);
    const actor = await authenticate(hub, req.headers.authorization);
    await visibleRun(hub, actor, run_id, 'runs.view');
    let cursor = decodeRunCursor(lastEventId(req));
    // What the changes since the last step touched; neither: a step no change asked for (the
    // first, the poll), which reads everything.
    const touched = { logs: false, facts: false };
    const s = start(reply, req, { open, ...timing }, (_realm, run, what) => {
      if (run !== run_id) return false;
      if (what !== LOGGED) touched.facts = true;
      if (what === LOGGED || what === undefined) touched.logs = true;
      return true;
    });
    let sent = '';
    let state: RunsTable['state'] | null = null;
    await s.loop(async () => {
      const all = !touched.logs && !touched.facts;
      const { logs: readLogs, facts: readFacts } = touched;
      touched.logs = touched.facts = false;
      let more = false;
      // A history entry comes with every change of the run's state, phase or pending control: the
      // entries and the run are read together (one round trip on PostgreSQL).
      let run: RunsTable | undefined;
      if (all || readFacts) {
        const [entries, runs] = await together(hub.db, [
          historyAfterQuery(hub.db, run_id, cursor.history, BATCH),
          runByIdQuery(hub.db, run_id),
        ]);
        const history = historyEntries(entries as RunHistoryTable[]);
        for (const h of history) {
          cursor = { ...cursor, history: h.id };
          s.event('history', encodeRunCursor(cursor), h.entry);
        }
        more = history.length === BATCH;
        run = (runs as RunsTable[])[0];
        if (!run) return false;
        state = run.state;
      }
      // Log lines alone change nothing else. Once the run has ended they are all read.
      if (all || readLogs || (state !== null && isTerminal(state))) {
        const logs = await logLinesAfter(hub.db, run_id, cursor.log, BATCH);
        for (const l of logs) {
          cursor = { ...cursor, log: l.seq };
          s.event('log', encodeRunCursor(cursor), l);
        }
        more ||= logs.length > BATCH;
      }
      if (run) {
        const key = `${run.state}|${run.updated_at}|${run.current_phase}`;
        if (key !== sent) {
          sent = key;
          s.event('state', encodeRunCursor(cursor), await showRun(hub, run, false));
        }
      }
      // What a step left unread is read at once.
      s.lookAgainIn(more ? 0 : null);
      // The stream ends after the run's final state, once every line before it was sent.
      return more || state === null || !isTerminal(state);
    });
  });

  app.get('/v1/realms/:realm_id/events', async (req, reply) => {
    const { realm_id } = parse(realmParams, req.params);
    const actor = await authenticate(hub, req.headers.authorization);
    await requireRealm(hub, actor, realm_id, 'runs.view');
    const given = lastEventId(req);
    if (given !== undefined && !/^[0-9a-f-]{36}$/.test(given))
      throw new AppError('invalid_params', 'Last-Event-ID is not an event id of this stream');
    const read = (after: string, limit: number) => realmChangesAfter(hub.db, realm_id, after, limit);
    const changes = realmChanges<RunsTable>({
      read,
      // On PostgreSQL new entries come with their runs, a round trip fewer. On SQLite, where a
      // statement costs none, the runs are read after them, once each (the join reads a run's row
      // for each of its entries).
      readNew: isPostgres(hub.db)
        ? (after, limit) => realmChangesWithRuns(hub.db, realm_id, after, limit)
        : read,
      now: () => hub.now(),
      settleMs: isPostgres(hub.db) ? SETTLE_MS : 0,
      // Without Last-Event-ID: changes from now on (history ids are time-ordered).
      from: given ?? hub.newId(),
    });
    // The entries the notices since the last look named; null: one named none (read everything).
    let named: string[] | null = [];
    const s = start(reply, req, { open, ...timing }, (realm, _run, what) => {
      // A change of logs only is no state change; an entry read already needs no look.
      if (realm !== realm_id || what === LOGGED) return false;
      if (what === undefined) named = null;
      else if (changes.seen(what)) return false;
      else named?.push(what);
      return true;
    });
    await s.loop(async () => {
      // A look that no notice asked for (the first, the poll, a look asked for) reads everything.
      const asked = named?.length ? named : undefined;
      named = [];
      const fresh = await changes.next(asked);
      s.lookAgainIn(changes.lookAgainInMs());
      if (fresh.length === 0) return true;
      // The runs read with their entries; those of entries the window's look found, read now.
      const runs = new Map<string, RunsTable>();
      for (const c of fresh) if (c.run) runs.set(c.run_id, c.run);
      const unread = [...new Set(fresh.filter((c) => !c.run).map((c) => c.run_id))];
      for (const r of await loadRuns(hub.db, unread)) runs.set(r.run_id, r);
      // One state event per run, at its last change in this batch.
      const last = new Map(fresh.map((c) => [c.run_id, c.id]));
      for (const c of fresh) {
        const run = runs.get(c.run_id);
        if (run && last.get(c.run_id) === c.id) s.event('state', c.id, await showRun(hub, run, false));
      }
      return true;
    });
  });

  app.addHook('preClose', async () => {
    for (const s of open) s.end();
  });
}

function parse<T>(schema: z.ZodType<T>, params: unknown): T {
  const r = schema.safeParse(params);
  if (!r.success) throw new AppError('invalid_params', 'bad path parameter');
  return r.data;
}

function lastEventId(req: FastifyRequest): string | undefined {
  const h = req.headers['last-event-id'];
  const v = Array.isArray(h) ? h[0] : h;
  return v === undefined || v === '' ? undefined : v;
}

interface Stream {
  event(type: string, id: string, data: unknown): void;
  /**
   * Calls `step` at once, then whenever a change it cares for arrives (or `pollMs` passed), until it
   * answers false, the client goes or the hub closes.
   */
  loop(step: () => Promise<boolean>): Promise<void>;
  /** The next step comes within `ms` even without a change (null: at the poll, as usual). */
  lookAgainIn(ms: number | null): void;
  end(): void;
}

function start(
  reply: FastifyReply,
  req: FastifyRequest,
  streams: { open: Set<Stream>; pollMs: number; batchMs: number },
  concerns: (realmId: string, runId: string, what: RunChange) => boolean,
): Stream {
  const { open, pollMs, batchMs } = streams;
  reply.hijack();
  const res: ServerResponse = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
    'x-content-type-options': 'nosniff',
    connection: 'close',
  });
  res.write(`retry: 1000\n\n`);
  let ended = false;
  let wake: (() => void) | null = null;
  /** Ends a pause between two steps (only the stream's end does). */
  let stopPause: (() => void) | null = null;
  let soon: number | null = null;
  // A change that arrives while a step runs makes the next step start at once.
  let changed = false;
  const onChange = (realmId: string, runId: string, what: RunChange) => {
    if (!concerns(realmId, runId, what)) return;
    changed = true;
    wake?.();
  };
  runFeed.on('change', onChange);
  // The events of one step leave in one write (one system call, and one wake-up of the client).
  let pending = '';
  const flush = () => {
    if (pending && !ended) res.write(pending);
    pending = '';
  };
  const stream: Stream = {
    lookAgainIn(ms) {
      soon = ms;
    },
    event(type, id, data) {
      if (!ended) pending += `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
    },
    async loop(step) {
      let quietSince = Date.now();
      try {
        while (!ended) {
          changed = false;
          const steppedAt = Date.now();
          const more = await step();
          flush();
          if (!more) break;
          if (Date.now() - quietSince >= KEEPALIVE_MS) {
            res.write(': keep-alive\n\n');
            quietSince = Date.now();
          }
          if (ended) break;
          if (!changed) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, soon ?? pollMs);
              soon = null;
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = null;
          }
          // The changes of the next `batchMs` after a step are read together.
          const pause = steppedAt + batchMs - Date.now();
          if (pause > 0 && !ended) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, pause);
              stopPause = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            stopPause = null;
          }
        }
      } catch (err) {
        req.log.error({ err, url: req.url, reqId: req.id }, 'event stream failed');
      } finally {
        stream.end();
      }
    },
    end() {
      if (ended) return;
      ended = true;
      runFeed.off('change', onChange);
      open.delete(stream);
      wake?.();
      stopPause?.();
      res.end();
    },
  };
  open.add(stream);
  req.raw.on('close', () => stream.end());
  return stream;
}
