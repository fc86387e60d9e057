import { z } from 'zod';
import { RUN_STATES } from '../../shared/api/run-states.js';
import { merged } from '../../shared/merged.js';
import { AppendLogsBody, RenewLeaseBody, RunReportBody, StartChildBody } from '../../shared/protocol.js';
import { requireDaemon } from '../access/access.service.js';
import { id, op, paging } from '../http/op.js';
import { MAX_GROUP_LIMIT } from './concurrency.js';
import { cancelRun, forceTerminate, resumeRun } from './control.service.js';
import { createRun, startChild } from './create.service.js';
import { appendLogs, renewLeases, reportRun } from './daemon.service.js';
import { claimRun } from './dispatch.service.js';
import { listRuns, runLogs, showVisibleRun, visibleRun } from './read.service.js';

const handles = z.array(z.string().min(1).max(100)).max(100);
/** A deadline in milliseconds: at most 30 days. */
const deadline = z
  .number()
  .int()
  .min(1)
  .max(30 * 24 * 3600 * 1000);

/** Runs: user operations and the daemon-side calls (realm token). */
export const runOps = [
  op({
    name: 'runs/new',
    summary: 'Starts a run of a team (or of one agent): answers it queued and dispatches it.',
    input: z
      .object({
        realm_id: id.optional(),
        team_id: id.optional(),
        team: z.string().min(1).max(201).optional(),
        agent: z.string().min(1).max(201).optional(),
        execution_type: z.enum(['team', 'agent']).optional(),
        workspace_id: id.optional(),
        inputs: z.record(z.string(), z.unknown()).optional(),
        run_name: z.string().trim().min(1).max(200).optional(),
        reviewers: z.record(z.string(), handles).optional(),
        notify_channels: z.array(z.string().min(1).max(200)).max(100).nullable().optional(),
        external_id: z.string().min(1).max(500).nullable().optional(),
        context_labels: z
          .union([z.record(z.string(), z.unknown()), z.array(z.string())])
          .nullable()
          .optional(),
        idempotency_key: z.string().min(1).max(200).optional(),
        priority: z.number().int().min(0).max(9).optional(),
        concurrency_key: z.string().min(1).max(200).optional(),
        concurrency_limit: z.number().int().min(1).max(MAX_GROUP_LIMIT).optional(),
        queue_timeout_ms: deadline.optional(),
        timeout_ms: deadline.optional(),
      })
      .refine((v) => v.concurrency_limit === undefined || v.concurrency_key !== undefined, {
        path: ['concurrency_limit'],
        message: 'needs concurrency_key',
      }),
    async handler(ctx, input) {
      const { run, created } = await createRun(
        ctx,
        ctx.actor,
        merged(input, { external_id: input.external_id ?? undefined }),
      );
      // A repeat of an idempotency_key answers the first run with 200 (CONTRACT.md §10).
      ctx.status(created ? 201 : 200);
      return { data: run };
    },
  }),
  op({
    name: 'runs/get_by_id',
    summary: 'A run; with with_history: true, its history too.',
    input: z.object({ run_id: id, with_history: z.boolean().optional() }),
    async handler(ctx, input) {
      return { data: await showVisibleRun(ctx, ctx.actor, input.run_id, input.with_history === true) };
    },
  }),
  op({
    name: 'runs/list',
    summary:
      'The runs of a realm, newest first (order: "queue": queued runs in start order); filters: state, team, the descendants of a run (root_run_id), top-level runs only, a text in the name, who started it, when it started.',
    input: z.object({
      realm_id: id,
      state: z.enum(RUN_STATES).optional(),
      team_id: id.optional(),
      root_run_id: id.optional(),
      top_level: z.boolean().optional(),
      name_contains: z.string().trim().min(1).max(200).optional(),
      created_by_user_id: id.optional(),
      started_after: z.number().int().min(0).optional(),
      started_before: z.number().int().min(0).optional(),
      order: z.enum(['newest', 'queue']).optional(),
      ...paging,
    }),
    async handler(ctx, input) {
      return listRuns(ctx, ctx.actor, input);
    },
  }),
  op({
    name: 'runs/logs',
    summary: 'The log lines of a run after sequence number `after` (default 0), oldest first.',
    input: z.object({
      run_id: id,
      after: z.number().int().min(0).default(0),
      limit: z.number().int().min(1).max(5000).default(1000),
    }),
    async handler(ctx, input) {
      const { run } = await visibleRun(ctx, ctx.actor, input.run_id, 'runs.view');
      return runLogs(ctx, run, input.after, input.limit);
    },
  }),
  op({
    name: 'runs/cancel',
    summary: 'Cancels a run: at once when no daemon holds it, else through its daemon.',
    input: z.object({ run_id: id, reason: z.string().max(2000).optional() }),
    async handler(ctx, input) {
      return { data: await cancelRun(ctx, ctx.actor, input.run_id, input.reason ?? null) };
    },
  }),
  op({
    name: 'runs/resume',
    summary: 'A failed, cancelled or lost run continues from its current phase.',
    input: z.object({ run_id: id }),
    async handler(ctx, input) {
      return { data: await resumeRun(ctx, ctx.actor, input.run_id) };
    },
  }),
  op({
    name: 'runs/force_terminate',
    summary: 'Ends a run whose daemon cannot: only when force_terminate.eligible.',
    input: z.object({ run_id: id, reason: z.string().trim().min(1).max(2000) }),
    async handler(ctx, input) {
      return { data: await forceTerminate(ctx, ctx.actor, input.run_id, input.reason) };
    },
  }),
  // Daemon-side calls.
  op({
    name: 'queue/claim',
    summary:
      'A daemon claims an offered run; the first claim wins (and gets runs/execute), the others get claimed: false.',
    input: z.object({ queue_item_id: id, daemon_id: id }),
    async handler(ctx, input) {
      return { data: await claimRun(ctx, requireDaemon(ctx.actor), input) };
    },
  }),
  op({
    name: 'runs/report',
    summary:
      'A daemon reports a run event (started, phase.started, phase.completed, succeeded, failed, cancelled…).',
    input: RunReportBody,
    async handler(ctx, input) {
      return { data: await reportRun(ctx, requireDaemon(ctx.actor), input) };
    },
  }),
  op({
    name: 'runs/renew_lease',
    summary: 'A daemon renews the leases of its runs.',
    input: RenewLeaseBody,
    async handler(ctx, input) {
      return { data: await renewLeases(ctx, requireDaemon(ctx.actor), input) };
    },
  }),
  op({
    name: 'runs/append_logs',
    summary: 'A daemon uploads a batch of log lines of a run.',
    input: AppendLogsBody,
    async handler(ctx, input) {
      return { data: await appendLogs(ctx, requireDaemon(ctx.actor), input) };
    },
  }),
  op({
    name: 'runs/start_child',
    summary: 'A daemon starts a child run for a team phase of a run it holds.',
    input: StartChildBody,
    async handler(ctx, input) {
      const { run, created } = await startChild(ctx, requireDaemon(ctx.actor), input);
      ctx.status(created ? 201 : 200);
      return { data: run };
    },
  }),
];
