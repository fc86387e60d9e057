import type { Command } from 'commander';
import type { Request } from '../../shared/api/client.js';
import { followEvents, type StreamEvent, StreamRefused } from '../../shared/api/event-stream.js';
import type { RunState } from '../../shared/api/run-states.js';
import { isTerminal } from '../../shared/api/run-states.js';
import type { HistoryEntry, LogLine, Run } from '../../shared/api/runs.js';
import { resolveCatalogIn, splitRef } from '../catalog-refs.js';
import { ApiError, type HubClient } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { CliError, usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { looksLikeId, realmOrg, resolveRealm, resolveRun, resolveWorkspace, shortId } from '../resolve.js';
import {
  attemptMarker,
  attemptOf,
  attemptStarts,
  formatRunningTime,
  logLine,
  Names,
  runningTime,
} from '../run-display.js';
import { parseInput } from '../run-target.js';

const REALM_HELP = 'realm id or name, where a run name is looked up (default "default")';
const ORG_HELP = 'organization id or slug (to find a realm by name)';

interface RunRefOpts {
  realm?: string;
  org?: string;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration option: `500ms`, `30s`, `5m`, `2h`, `1d`, or milliseconds. */
export function parseDuration(v: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(v.trim());
  if (!m || Number(m[1]) <= 0) throw usageError(`"${v}" is not a duration (e.g. 500ms, 30s, 5m, 2h, 1d)`);
  return Number(m[1]) * UNIT_MS[m[2] ?? 'ms']!;
}

/** An integer option. */
function parseInteger(v: string): number {
  if (!/^-?\d+$/.test(v.trim())) throw usageError(`"${v}" is not an integer`);
  return Number(v);
}

/** A queued run: why it waits. */
function waitingText(r: Run): string {
  const w = r.waiting_for;
  return w ? `group ${w.key}=${w.value} full (${w.running}/${w.limit})` : '-';
}

/** `<run>` by id or by name, with the realm to look the name up in. */
const runArgument = (cmd: Command) =>
  cmd
    .argument('<run>', 'run id, or its name (hello-team-1) in --realm')
    .option('--realm <realm>', REALM_HELP)
    .option('--org <org>', ORG_HELP);

async function runIdOf(client: HubClient, ref: string, o: RunRefOpts): Promise<string> {
  if (looksLikeId(ref)) return ref;
  return resolveRun(client, await resolveRealm(client, o.realm ?? 'default', o.org), ref);
}

async function runRecord(r: Run, names: Names, now: number): Promise<string> {
  const [team, realm, workspace, daemon] = await Promise.all([
    names.team(r),
    names.realmOf(r.realm_id),
    names.workspaceOf(r.workspace_id),
    names.daemonOf(r.daemon_id),
  ]);
  return formatRecord([
    ['id', r.run_id],
    ['name', r.run_name],
    ['state', r.state],
    ['phase', r.current_phase ?? '-'],
    ['error', r.error ?? '-'],
    ['team', team],
    ['realm', realm],
    ['workspace', workspace],
    ['daemon', daemon],
    ['depth', r.call_depth],
    ['parent', r.parent_run_id ?? '-'],
    ['started', time(r.started_at)],
    ['completed', time(r.completed_at)],
    ['running time', r.history ? formatRunningTime(runningTime(r, r.history, now)) : '-'],
    ['pending', r.pending_control?.type ?? '-'],
    ['priority', r.priority],
    ['waiting', waitingText(r)],
    ['queue deadline', time(r.queue_deadline_at)],
    ['deadline', time(r.run_deadline_at)],
    [
      'terminate',
      r.force_terminate.eligible
        ? `eligible (${r.force_terminate.trigger})`
        : `no (${r.force_terminate.blocker})`,
    ],
  ]);
}

/** A run's server-sent events (CONTRACT.md §14) until `onEvent` answers true or the run ends. */
async function followRun(
  client: HubClient,
  runId: string,
  onEvent: (e: StreamEvent) => boolean | Promise<boolean>,
) {
  try {
    await followEvents(`${client.url}/v1/runs/${encodeURIComponent(runId)}/events`, {
      token: client.token,
      onEvent,
    });
  } catch (err) {
    if (err instanceof StreamRefused) throw new ApiError(err.code, err.message, err.status, null, null);
    throw err;
  }
}

/** Tells which attempt a log line belongs to as history entries come, and marks each new one. */
class AttemptTracker {
  private readonly starts = [0];
  private ended = false;
  private shown = 0;
  /** A history entry: a move out of an ended state begins an attempt. */
  history(e: HistoryEntry) {
    if (this.ended && !isTerminal(e.state)) this.starts.push(e.at);
    this.ended = isTerminal(e.state);
  }
  /** The marker to print before this line (when its attempt is not the one shown last), or ``. */
  marker(l: LogLine, always: boolean) {
    const n = attemptOf(this.starts, l.at);
    if (n === this.shown) return '';
    const first = this.shown === 0;
    this.shown = n;
    return first && n === 1 && !always ? '' : attemptMarker(n);
  }
  static of(starts: number[]) {
    const t = new AttemptTracker();
    t.starts.splice(0, 1, ...starts);
    return t;
  }
  get count() {
    return this.starts.length;
  }
}

/** What a person needs when a review opens: its id, the summary, and how to decide it. */
function reviewOpened(e: HistoryEntry): string {
  const d = e.data ?? {};
  const id = String(d.review_id ?? '');
  const summary = typeof d.summary === 'string' ? d.summary : '';
  return [
    `review ${id} opened${e.phase ? ` on phase ${e.phase}` : ''}${d.round ? ` (round ${d.round})` : ''}:`,
    ...summary.split('\n').map((x) => `    ${x}`),
    `  approve:  svc reviews approve ${id}`,
    `  reject:   svc reviews reject ${id} --message "why"`,
    `  changes:  svc reviews request-changes ${id} --message "what to change"`,
    '',
  ].join('\n');
}

/**
 * Follows a run until it ends: a line per change of state, its log lines with their time as they
 * come, a marker when an attempt begins, and what to do when a review opens. Answers the final run.
 */
async function watch(client: HubClient, runId: string, out: (s: string) => void, utc = false): Promise<Run> {
  let last = '';
  const spinner = ['|', '/', '-', '\\'];
  let tick = 0;
  let final: Run | null = null;
  const attempts = new AttemptTracker();
  await followRun(client, runId, (e) => {
    if (e.event === 'history') {
      const h = e.data as HistoryEntry;
      attempts.history(h);
      if (h.type === 'review.requested') out(reviewOpened(h));
      return false;
    }
    if (e.event === 'log') {
      const l = e.data as LogLine;
      out(attempts.marker(l, false) + logLine(l, utc));
      return false;
    }
    if (e.event !== 'state') return false;
    const r = e.data as Run;
    const line = `${r.run_name}: ${r.state}${r.current_phase ? ` · phase ${r.current_phase}` : ''}${
      r.pending_control ? ` · ${r.pending_control.type} pending` : ''
    }`;
    if (line !== last) {
      out(`${isTerminal(r.state) ? '•' : spinner[tick++ % spinner.length]} ${line}\n`);
      last = line;
    }
    if (isTerminal(r.state)) final = r;
    return final !== null;
  });
  // The stream ended without a final state (the hub closed it): ask once.
  return final ?? (await client.api.call('runs/get_by_id', { run_id: runId })).data;
}

/** A watched run that ended otherwise than `succeeded`: exit code 1; with --json, code `run_<state>`. */
const runNotSucceeded = (end: Run) =>
  new CliError(`run ${end.state}${end.error ? `: ${end.error}` : ''}`, 1, `run_${end.state}`);

/** A team or agent named on `runs start` that the hub does not know: its not_found, naming what exists nearby. */
async function explainNotFound(
  client: HubClient,
  err: unknown,
  kind: 'teams' | 'agents',
  ref: string,
  realmId: string,
) {
  if (!(err instanceof ApiError) || err.code !== 'not_found') return err;
  try {
    await resolveCatalogIn(client, kind, ref, await realmOrg(client, realmId));
  } catch (better) {
    if (better instanceof ApiError && better.code === 'not_found') return better;
  }
  return err;
}

export default defineCommand({
  summary: 'Runs: start, get, list, watch, logs, cancel, resume, terminate',
  register(cmd: Command, ctx) {
    cmd
      .command('start')
      .description('Start a run of a team (NAME or NAME@VERSION), or of one agent with --agent')
      .argument('[team]', 'team name, name@version or team id')
      .option('--agent <agent>', 'run one agent (name or name@version) instead of a team')
      .option('--workspace <workspace>', 'workspace id, or name or path in --realm')
      .option('--realm <realm>', 'realm id or name (default "default"; not needed with a workspace id)')
      .option('--org <org>', 'organization id or slug (to find a realm by name)')
      .option('--input <key=value>', 'an input (repeatable; JSON values are parsed)', parseInput, {})
      .option('--name <name>', 'run name (default: <team>-<counter>)')
      .option('--external-id <id>', 'your own reference for the run')
      .option('--watch', 'follow the run until it ends (exit code 0 only when it succeeds)')
      .option(
        '--idempotency-key <key>',
        'a repeat with the same key in the realm within 24 h answers the first run instead of starting another',
      )
      .option('--priority <n>', '0–9 (default 5): among runs that can start, higher first', parseInteger)
      .option('--concurrency-key <key>', 'one more concurrency group: runs with this key share its slots')
      .option('--concurrency-limit <n>', 'slots of the --concurrency-key group (default 1)', parseInteger)
      .option(
        '--queue-timeout <duration>',
        'fail with queue_timeout if still queued after (e.g. 10m)',
        parseDuration,
      )
      .option('--timeout <duration>', 'cancel with run_timeout if not ended after (e.g. 2h)', parseDuration)
      .action(
        async (
          team: string | undefined,
          opts: {
            agent?: string;
            workspace?: string;
            realm?: string;
            org?: string;
            input: Record<string, unknown>;
            name?: string;
            externalId?: string;
            watch?: boolean;
            idempotencyKey?: string;
            priority?: number;
            concurrencyKey?: string;
            concurrencyLimit?: number;
            queueTimeout?: number;
            timeout?: number;
          },
          c,
        ) => {
          if (!team === !opts.agent) throw usageError('give a team, or --agent');
          const s = session(ctx, c);
          const body: Request<'runs/new'> = { inputs: opts.input };
          if (opts.agent) Object.assign(body, { agent: opts.agent, execution_type: 'agent' });
          else if (looksLikeId(team!)) body.team_id = team;
          else body.team = team;
          // With a workspace id, its realm is looked up only to explain a not_found.
          let realmId: string | null = null;
          if (opts.workspace && looksLikeId(opts.workspace)) body.workspace_id = opts.workspace;
          else {
            realmId = await resolveRealm(s.client, opts.realm ?? 'default', opts.org);
            if (opts.workspace) body.workspace_id = await resolveWorkspace(s.client, realmId, opts.workspace);
            else body.realm_id = realmId;
          }
          if (opts.name) body.run_name = opts.name;
          if (opts.externalId) body.external_id = opts.externalId;
          if (opts.idempotencyKey) body.idempotency_key = opts.idempotencyKey;
          if (opts.priority !== undefined) body.priority = opts.priority;
          if (opts.concurrencyKey !== undefined) body.concurrency_key = opts.concurrencyKey;
          if (opts.concurrencyLimit !== undefined) body.concurrency_limit = opts.concurrencyLimit;
          if (opts.queueTimeout !== undefined) body.queue_timeout_ms = opts.queueTimeout;
          if (opts.timeout !== undefined) body.timeout_ms = opts.timeout;
          const reply = await s.client.api.call('runs/new', body).catch(async (err: unknown) => {
            const [kind, ref] = opts.agent
              ? (['agents', opts.agent] as const)
              : (['teams', body.team] as const);
            realmId ??= await s.client.api
              .call('workspaces/get', { id: body.workspace_id! })
              .then((r) => r.data.realm_id)
              .catch(() => null);
            throw ref && realmId ? await explainNotFound(s.client, err, kind, ref, realmId) : err;
          });
          s.print(reply, () => {
            const r = reply.data;
            const waits = r.waiting_for ? ` (waiting: ${waitingText(r)})` : '';
            return `Started run ${r.run_name} (${r.run_id}): ${r.state}${waits}.\n`;
          });
          if (opts.watch) {
            const end = await watch(s.client, reply.data.run_id, (x) =>
              s.json ? undefined : ctx.stderr.write(x),
            );
            if (end.state !== 'succeeded') throw runNotSucceeded(end);
          }
        },
      );

    runArgument(cmd.command('get').description('Show a run, with the names of what it refers to'))
      .option('--history', 'with its history')
      .action(async (ref: string, opts: RunRefOpts & { history?: boolean }, c) => {
        const s = session(ctx, c);
        const runId = await runIdOf(s.client, ref, opts);
        // The running time needs the history; --json prints the reply as asked for.
        const reply = await s.client.api.call('runs/get_by_id', {
          run_id: runId,
          ...(opts.history || !s.json ? { with_history: true } : {}),
        });
        if (s.json) return s.print(reply, () => '');
        const names = new Names(s.client);
        let text = await runRecord(reply.data, names, Date.now());
        if (opts.history && reply.data.history) {
          text += '\nhistory:\n';
          for (const e of reply.data.history) {
            const review = typeof e.data?.review_id === 'string' ? ` review ${e.data.review_id}` : '';
            text += `  ${time(e.at)}  ${e.type}${e.phase ? ` ${e.phase}` : ''}${review}${e.error ? ` (${e.error})` : ''}${await names.actor(e.actor)}\n`;
          }
        }
        ctx.stdout.write(text);
      });

    withPaging(
      cmd
        .command('list')
        .description("A realm's runs, newest first; with --queue, queued runs in the order they start")
        .option('--realm <realm>', 'realm id or name (default "default")')
        .option('--org <org>', 'organization id or slug (to find a realm by name)')
        .option('--state <state>', 'only runs in this state')
        .option('--team <team>', 'only runs of this team: name, name@version or team id')
        .option('--queue', 'queued runs in start order, with position and what each waits for'),
    ).action(
      async (
        opts: {
          realm?: string;
          org?: string;
          state?: string;
          team?: string;
          queue?: boolean;
          limit?: number;
          cursor?: string;
        },
        c,
      ) => {
        const s = session(ctx, c);
        const realmId = await resolveRealm(s.client, opts.realm ?? 'default', opts.org);
        // A team by name is looked up in the realm's organization; with a version, only its runs.
        let teamId = opts.team;
        let versionId: string | null = null;
        if (opts.team && !looksLikeId(opts.team)) {
          const tv = await resolveCatalogIn(s.client, 'teams', opts.team, await realmOrg(s.client, realmId));
          teamId = tv.team_id!;
          if (splitRef(opts.team).version) versionId = tv.id;
        }
        const reply = await s.client.api.call('runs/list', {
          realm_id: realmId,
          ...(opts.state ? { state: opts.state as RunState } : {}),
          ...(teamId ? { team_id: teamId } : {}),
          ...(opts.queue ? { order: 'queue' as const } : {}),
          ...pageArgs(opts),
        });
        if (versionId) reply.data = reply.data.filter((r) => r.team_version_id === versionId);
        if (opts.queue) {
          s.printPage(
            reply,
            [
              col('#', (r) => String(r.queue_position ?? '-')),
              col('ID', 'run_id'),
              col('NAME', 'run_name'),
              col('PRIORITY', (r) => String(r.priority)),
              col('WAITING FOR', waitingText),
              col('QUEUED', (r) => time(r.started_at)),
            ],
            'No queued runs.',
          );
          return;
        }
        const teams = new Map<string, string>();
        if (!s.json) {
          const names = new Names(s.client);
          const ids = [...new Set(reply.data.flatMap((r) => (r.team_version_id ? [r.team_version_id] : [])))];
          await Promise.all(
            ids.map(async (id) => teams.set(id, (await names.teamVersion(id)) ?? shortId(id))),
          );
        }
        s.printPage(
          reply,
          [
            col('ID', 'run_id'),
            col('NAME', 'run_name'),
            col('TEAM', (r) => (r.team_version_id ? teams.get(r.team_version_id) : '-')),
            col('STATE', 'state'),
            col('PHASE', (r) => r.current_phase ?? '-'),
            col('STARTED', (r) => time(r.started_at)),
          ],
          'No runs.',
        );
      },
    );

    runArgument(
      cmd
        .command('watch')
        .description(
          'Follow a run until it ends: its states, log lines, and reviews to decide; exit code 0 only when it succeeded',
        ),
    )
      .option('--utc', 'log times as full UTC date and time')
      .action(async (ref: string, opts: RunRefOpts & { utc?: boolean }, c) => {
        const s = session(ctx, c);
        const runId = await runIdOf(s.client, ref, opts);
        const end = await watch(
          s.client,
          runId,
          (x) => (s.json ? undefined : ctx.stdout.write(x)),
          opts.utc === true,
        );
        if (s.json) ctx.stdout.write(`${JSON.stringify({ ok: true, data: end }, null, 2)}\n`);
        if (end.state !== 'succeeded') throw runNotSucceeded(end);
      });

    runArgument(
      cmd
        .command('logs')
        .description("A run's log lines with their time; --follow waits for more until the run ends"),
    )
      .option('--follow', 'keep printing new lines until the run ends')
      .option('--after <seq>', 'only lines after this sequence number', (v) => Number(v))
      .option('--utc', 'times as full UTC date and time')
      .action(
        async (ref: string, opts: RunRefOpts & { follow?: boolean; after?: number; utc?: boolean }, c) => {
          const s = session(ctx, c);
          const runId = await runIdOf(s.client, ref, opts);
          const utc = opts.utc === true;
          if (opts.follow) {
            // Pushed by the hub until the run ends (its history and earlier lines first).
            const after = opts.after ?? 0;
            const attempts = new AttemptTracker();
            await followRun(s.client, runId, (e) => {
              if (e.event === 'history') attempts.history(e.data as HistoryEntry);
              if (e.event !== 'log' || (e.data as LogLine).seq <= after) return false;
              const l = e.data as LogLine;
              ctx.stdout.write(
                s.json ? `${JSON.stringify(l)}\n` : attempts.marker(l, false) + logLine(l, utc),
              );
              return false;
            });
            return;
          }
          let attempts: AttemptTracker | null = null;
          if (!s.json) {
            const run = (await s.client.api.call('runs/get_by_id', { run_id: runId, with_history: true }))
              .data;
            attempts = AttemptTracker.of(attemptStarts(run, run.history ?? []));
          }
          let after = opts.after ?? 0;
          for (;;) {
            const reply = await s.client.api.call('runs/logs', { run_id: runId, after });
            for (const l of reply.data) {
              ctx.stdout.write(
                attempts
                  ? attempts.marker(l, attempts.count > 1) + logLine(l, utc)
                  : `${JSON.stringify(l)}\n`,
              );
            }
            after = reply.next_after;
            if (!reply.has_more) return;
          }
        },
      );

    runArgument(cmd.command('cancel').description('Cancel a run (its daemon stops the agent and confirms)'))
      .option('--reason <text>', 'why')
      .action(async (ref: string, opts: RunRefOpts & { reason?: string }, c) => {
        const s = session(ctx, c);
        const runId = await runIdOf(s.client, ref, opts);
        const reply = await s.client.api.call('runs/cancel', {
          run_id: runId,
          ...(opts.reason ? { reason: opts.reason } : {}),
        });
        s.print(reply, () =>
          reply.data.state === 'cancelled'
            ? `Run ${reply.data.run_id} cancelled.\n`
            : `Cancel requested for run ${reply.data.run_id}; its daemon confirms when it has stopped.\n`,
        );
      });

    runArgument(
      cmd.command('resume').description('Resume a failed, cancelled or lost run from its current phase'),
    ).action(async (ref: string, opts: RunRefOpts, c) => {
      const s = session(ctx, c);
      const runId = await runIdOf(s.client, ref, opts);
      const reply = await s.client.api.call('runs/resume', { run_id: runId });
      s.print(reply, () => `Run ${reply.data.run_id} resumed: ${reply.data.state}.\n`);
    });

    runArgument(
      cmd
        .command('terminate')
        .description(
          'Force-terminate a run whose daemon cannot stop it (offline, lease expired, cancel unanswered)',
        ),
    )
      .requiredOption('--reason <text>', 'why (recorded)')
      .action(async (ref: string, opts: RunRefOpts & { reason: string }, c) => {
        const s = session(ctx, c);
        const runId = await runIdOf(s.client, ref, opts);
        const reply = await s.client.api.call('runs/force_terminate', {
          run_id: runId,
          reason: opts.reason,
        });
        s.print(reply, () => `Run ${reply.data.run_id} terminated.\n`);
      });
  },
});
