import type { Command } from 'commander';
import type { Request } from '../../shared/api/client.js';
import { followEvents, type StreamEvent, StreamRefused } from '../../shared/api/event-stream.js';
import type { RunState } from '../../shared/api/run-states.js';
import { isTerminal } from '../../shared/api/run-states.js';
import type { LogLine, Run } from '../../shared/api/runs.js';
import { ApiError, type HubClient } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { CliError, usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { looksLikeId, resolveRealm } from '../resolve.js';
import { parseInput } from '../run-target.js';

async function workspaceId(
  client: HubClient,
  ref: string,
  realm: string | undefined,
  org: string | undefined,
) {
  if (looksLikeId(ref)) return ref;
  const realmId = await resolveRealm(client, realm ?? 'default', org);
  const page = await client.api.call('workspaces/list', { realm_id: realmId, limit: 500 });
  const hit = page.data.find((w) => w.name === ref || w.path === ref);
  if (!hit) throw new CliError(`no workspace "${ref}" in that realm`);
  return hit.id;
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

function runRecord(r: Run): string {
  return formatRecord([
    ['id', r.run_id],
    ['name', r.run_name],
    ['state', r.state],
    ['phase', r.current_phase ?? '-'],
    ['error', r.error ?? '-'],
    ['team', r.team_id ?? '-'],
    ['realm', r.realm_id],
    ['workspace', r.workspace_id ?? '-'],
    ['daemon', r.daemon_id ?? '-'],
    ['depth', r.call_depth],
    ['parent', r.parent_run_id ?? '-'],
    ['started', time(r.started_at)],
    ['completed', time(r.completed_at)],
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
async function followRun(client: HubClient, runId: string, onEvent: (e: StreamEvent) => boolean) {
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

/** Follows a run until it ends; prints a line per change. Answers the final run. */
async function watch(client: HubClient, runId: string, out: (s: string) => void): Promise<Run> {
  let last = '';
  const spinner = ['|', '/', '-', '\\'];
  let tick = 0;
  let final: Run | null = null;
  await followRun(client, runId, (e) => {
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

export default defineCommand({
  summary: 'Runs: start, get, list, watch, logs, cancel, resume, terminate',
  register(cmd: Command, ctx) {
    cmd
      .command('start')
      .description('Start a run of a team (NAME or NAME@VERSION), or of one agent with --agent')
      .argument('[team]', 'team name, name@version or team id')
      .option('--agent <agent>', 'run one agent (name or name@version) instead of a team')
      .option('--workspace <workspace>', 'workspace id, or name/path in --realm')
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
          if (opts.workspace)
            body.workspace_id = await workspaceId(s.client, opts.workspace, opts.realm, opts.org);
          else body.realm_id = await resolveRealm(s.client, opts.realm ?? 'default', opts.org);
          if (opts.name) body.run_name = opts.name;
          if (opts.externalId) body.external_id = opts.externalId;
          if (opts.idempotencyKey) body.idempotency_key = opts.idempotencyKey;
          if (opts.priority !== undefined) body.priority = opts.priority;
          if (opts.concurrencyKey !== undefined) body.concurrency_key = opts.concurrencyKey;
          if (opts.concurrencyLimit !== undefined) body.concurrency_limit = opts.concurrencyLimit;
          if (opts.queueTimeout !== undefined) body.queue_timeout_ms = opts.queueTimeout;
          if (opts.timeout !== undefined) body.timeout_ms = opts.timeout;
          const reply = await s.client.api.call('runs/new', body);
          s.print(reply, () => {
            const r = reply.data;
            const waits = r.waiting_for ? ` (waiting: ${waitingText(r)})` : '';
            return `Started run ${r.run_name} (${r.run_id}): ${r.state}${waits}.\n`;
          });
          if (opts.watch) {
            const end = await watch(s.client, reply.data.run_id, (x) => ctx.stderr.write(x));
            if (end.state !== 'succeeded')
              throw new CliError(`run ${end.state}${end.error ? `: ${end.error}` : ''}`);
          }
        },
      );

    cmd
      .command('get')
      .description('Show a run')
      .argument('<run>', 'run id')
      .option('--history', 'with its history')
      .action(async (runId: string, opts: { history?: boolean }, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('runs/get_by_id', {
          run_id: runId,
          ...(opts.history ? { with_history: true } : {}),
        });
        s.print(reply, () => {
          let text = runRecord(reply.data);
          if (reply.data.history) {
            text += '\nhistory:\n';
            for (const e of reply.data.history) {
              text += `  ${time(e.at)}  ${e.type}${e.phase ? ` ${e.phase}` : ''}${e.error ? ` (${e.error})` : ''}\n`;
            }
          }
          return text;
        });
      });

    withPaging(
      cmd
        .command('list')
        .description("A realm's runs, newest first; with --queue, queued runs in the order they start")
        .option('--realm <realm>', 'realm id or name (default "default")')
        .option('--org <org>', 'organization id or slug (to find a realm by name)')
        .option('--state <state>', 'only runs in this state')
        .option('--team <team-id>', 'only runs of this team id')
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
        const reply = await s.client.api.call('runs/list', {
          realm_id: realmId,
          ...(opts.state ? { state: opts.state as RunState } : {}),
          ...(opts.team ? { team_id: opts.team } : {}),
          ...(opts.queue ? { order: 'queue' as const } : {}),
          ...pageArgs(opts),
        });
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
        s.printPage(
          reply,
          [
            col('ID', 'run_id'),
            col('NAME', 'run_name'),
            col('STATE', 'state'),
            col('PHASE', (r) => r.current_phase ?? '-'),
            col('STARTED', (r) => time(r.started_at)),
          ],
          'No runs.',
        );
      },
    );

    cmd
      .command('watch')
      .description('Follow a run until it ends; exit code 0 only when it succeeded')
      .argument('<run>', 'run id')
      .action(async (runId: string, _opts: unknown, c) => {
        const s = session(ctx, c);
        const end = await watch(s.client, runId, (x) => (s.json ? undefined : ctx.stdout.write(x)));
        if (s.json) ctx.stdout.write(`${JSON.stringify({ ok: true, data: end }, null, 2)}\n`);
        if (end.state !== 'succeeded')
          throw new CliError(`run ${end.state}${end.error ? `: ${end.error}` : ''}`);
      });

    cmd
      .command('logs')
      .description("A run's log lines; --follow waits for more until the run ends")
      .argument('<run>', 'run id')
      .option('--follow', 'keep printing new lines until the run ends')
      .option('--after <seq>', 'only lines after this sequence number', (v) => Number(v))
      .action(async (runId: string, opts: { follow?: boolean; after?: number }, c) => {
        const s = session(ctx, c);
        const print = (l: LogLine) =>
          ctx.stdout.write(
            s.json ? `${JSON.stringify(l)}\n` : `${l.phase ? `[${l.phase}] ` : ''}${l.text}\n`,
          );
        if (opts.follow) {
          // Pushed by the hub until the run ends (earlier lines first).
          const after = opts.after ?? 0;
          await followRun(s.client, runId, (e) => {
            if (e.event === 'log' && (e.data as LogLine).seq > after) print(e.data as LogLine);
            return false;
          });
          return;
        }
        let after = opts.after ?? 0;
        for (;;) {
          const reply = await s.client.api.call('runs/logs', { run_id: runId, after });
          for (const l of reply.data) print(l);
          after = reply.next_after;
          if (!reply.has_more) return;
        }
      });

    cmd
      .command('cancel')
      .description('Cancel a run (its daemon stops the agent and confirms)')
      .argument('<run>', 'run id')
      .option('--reason <text>', 'why')
      .action(async (runId: string, opts: { reason?: string }, c) => {
        const s = session(ctx, c);
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

    cmd
      .command('resume')
      .description('Resume a failed, cancelled or lost run from its current phase')
      .argument('<run>', 'run id')
      .action(async (runId: string, _opts: unknown, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('runs/resume', { run_id: runId });
        s.print(reply, () => `Run ${reply.data.run_id} resumed: ${reply.data.state}.\n`);
      });

    cmd
      .command('terminate')
      .description(
        'Force-terminate a run whose daemon cannot stop it (offline, lease expired, cancel unanswered)',
      )
      .argument('<run>', 'run id')
      .requiredOption('--reason <text>', 'why (recorded)')
      .action(async (runId: string, opts: { reason: string }, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('runs/force_terminate', {
          run_id: runId,
          reason: opts.reason,
        });
        s.print(reply, () => `Run ${reply.data.run_id} terminated.\n`);
      });
  },
});
