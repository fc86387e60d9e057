import type { Command } from 'commander';
import type { Request } from '../../shared/api/client.js';
import type { Review, ReviewDetail } from '../../shared/api/reviews.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import type { CliContext } from '../context.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { resolveRealm, resolveRun } from '../resolve.js';

type ReviewRow = Review & Partial<Pick<ReviewDetail, 'submissions'>>;

const ACTIONS = {
  approve: { action: 'approve', done: 'approved', what: 'Approve a review: the run goes on' },
  reject: { action: 'reject', done: 'rejected', what: 'Reject a review: a reviewed phase fails its run' },
  'request-changes': {
    action: 'request_changes',
    done: 'sent back with changes requested',
    what: 'Ask for changes: a reviewed phase runs again with your comment (up to its round limit)',
  },
  comment: { action: 'comment', done: 'commented', what: 'Comment on a review without deciding it' },
} as const;

const reviewers = (r: ReviewRow) => (r.reviewers === null ? 'operators' : r.reviewers.join(','));

function reviewRecord(r: ReviewRow): string {
  let text = formatRecord([
    ['id', r.id],
    ['state', r.state],
    ['run', `${r.run_name} (${r.run_id})`],
    ['team', r.team_name ?? '-'],
    ['phase', r.phase],
    ['kind', r.kind],
    ['round', r.round],
    ['reviewers', reviewers(r)],
    ['requested', time(r.requested_at)],
    ['deadline', time(r.deadline_at)],
    [
      'closed',
      r.closed_at === null ? '-' : `${time(r.closed_at)}${r.closed_by ? ` by ${r.closed_by.handle}` : ''}`,
    ],
    ['verdict', r.verdict ? `${r.verdict.action}${r.verdict.comment ? `: ${r.verdict.comment}` : ''}` : '-'],
    ['you may decide', r.can_submit],
  ]);
  text += `summary:\n${r.summary.replace(/^/gm, '  ')}\n`;
  if (r.submissions?.length) {
    text += 'submissions:\n';
    for (const s of r.submissions) {
      text += `  ${time(s.created_at)}  ${s.action}${s.actor?.handle ? ` by ${s.actor.handle}` : ''}${s.comment ? `: ${s.comment}` : ''}\n`;
    }
  }
  return text;
}

function submitCommand(cmd: Command, ctx: CliContext, name: keyof typeof ACTIONS): void {
  const a = ACTIONS[name];
  const sub = cmd.command(name).description(a.what).argument('<review>', 'review id');
  if (name === 'comment') sub.requiredOption('-m, --message <text>', 'the comment');
  else sub.option('-m, --message <text>', 'a comment for the run (a reject’s becomes the run’s error)');
  sub.action(async (reviewId: string, opts: { message?: string }, c) => {
    const s = session(ctx, c);
    const reply = await s.client.api.call('reviews/submit', {
      review_id: reviewId,
      action: a.action,
      ...(opts.message ? { comment: opts.message } : {}),
    });
    s.print(reply, () => `Review ${reply.data.id} ${a.done} (${reply.data.state}).\n`);
  });
}

export default defineCommand({
  summary: 'Reviews: list, show, approve, reject, request-changes, comment',
  register(cmd: Command, ctx) {
    withPaging(
      cmd
        .command('list')
        .description('Reviews of a realm, oldest first (open ones by default)')
        .option('--realm <realm>', 'realm id or name (default "default")')
        .option('--org <org>', 'organization id or slug (to find a realm by name)')
        .option(
          '--state <state>',
          'open (default), closed, all, approved, rejected, changes_requested, expired, cancelled',
        )
        .option('--mine', 'only the reviews waiting for you')
        .option('--run <run>', 'only the reviews of this run (id, or its name in the realm)'),
    ).action(
      async (
        opts: {
          realm?: string;
          org?: string;
          state?: string;
          mine?: boolean;
          run?: string;
          limit?: number;
          cursor?: string;
        },
        c,
      ) => {
        const s = session(ctx, c);
        const realmId = await resolveRealm(s.client, opts.realm ?? 'default', opts.org);
        const reply = await s.client.api.call('reviews/list', {
          realm_id: realmId,
          // The hub checks the value (invalid_params names the allowed ones).
          ...(opts.state ? { state: opts.state as Request<'reviews/list'>['state'] } : {}),
          ...(opts.mine ? { mine: true } : {}),
          ...(opts.run ? { run_id: await resolveRun(s.client, realmId, opts.run) } : {}),
          ...pageArgs(opts),
        });
        s.printPage(
          reply,
          [
            col('ID', 'id'),
            col('RUN', 'run_name'),
            col('PHASE', 'phase'),
            col('ROUND', 'round'),
            col('STATE', 'state'),
            col('REVIEWERS', reviewers),
            col('REQUESTED', (r) => time(r.requested_at)),
            col('DEADLINE', (r) => time(r.deadline_at)),
            col('YOURS', 'can_submit'),
          ],
          'No reviews.',
        );
      },
    );

    cmd
      .command('show')
      .description('Show a review: summary, state, deadline and every verdict or comment')
      .argument('<review>', 'review id')
      .action(async (reviewId: string, _opts: unknown, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('reviews/get', { id: reviewId });
        s.print(reply, () => reviewRecord(reply.data));
      });

    for (const name of Object.keys(ACTIONS) as (keyof typeof ACTIONS)[]) submitCommand(cmd, ctx, name);

    cmd
      .command('submit')
      .description('Submit any action: approve, reject, request_changes or comment')
      .argument('<review>', 'review id')
      .requiredOption('--action <action>', 'approve, reject, request_changes or comment')
      .option('-m, --message <text>', 'a comment')
      .action(async (reviewId: string, opts: { action: string; message?: string }, c) => {
        const known = Object.values(ACTIONS).find((x) => x.action === opts.action);
        if (!known)
          throw usageError(`--action ${opts.action}: expected approve, reject, request_changes or comment`);
        const s = session(ctx, c);
        const reply = await s.client.api.call('reviews/submit', {
          review_id: reviewId,
          action: known.action,
          ...(opts.message ? { comment: opts.message } : {}),
        });
        s.print(reply, () => `Review ${reply.data.id} ${known.done} (${reply.data.state}).\n`);
      });
  },
});
