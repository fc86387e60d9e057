import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { col, time } from '../output.js';
import { resolveGroup, resolveOrgOption, resolveUser } from '../resolve.js';

const ORG_HELP = 'organization id or slug (default: your only organization)';

export default defineCommand({
  summary: 'Groups of org members: new, list, add-member, remove, …',
  register(cmd, ctx) {
    cmd
      .command('new')
      .description('Create a group in an organization')
      .argument('<name>', 'group name')
      .option('--org <org>', ORG_HELP)
      .action(async (name: string, opts: { org?: string }, c) => {
        const s = session(ctx, c);
        const orgId = await resolveOrgOption(s.client, opts.org, 'to create a group');
        const reply = await s.client.api.call('groups/new', { org_id: orgId, name });
        s.print(reply, () => `Created group ${reply.data.name} (${reply.data.id}).\n`);
      });

    withPaging(
      cmd.command('list').description("An organization's groups").option('--org <org>', ORG_HELP),
    ).action(async (opts: { org?: string; limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const orgId = await resolveOrgOption(s.client, opts.org, 'to list groups');
      const reply = await s.client.api.call('groups/list', { org_id: orgId, ...pageArgs(opts) });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('NAME', 'name'),
          col('MEMBERS', (g) => g.members?.map((m) => m.handle).join(', ')),
          col('CREATED', (g) => time(g.created_at)),
        ],
        'No groups.',
      );
    });

    for (const [verb, op, text] of [
      ['add-member', 'groups/add_member', 'Add an organization member to a group'],
      ['remove-member', 'groups/remove_member', 'Remove a member from a group'],
    ] as const) {
      cmd
        .command(verb)
        .description(text)
        .argument('<group>', 'group id or name')
        .argument('<user>', 'user id, handle or e-mail')
        .option('--org <org>', ORG_HELP)
        .action(async (group: string, user: string, opts: { org?: string }, c) => {
          const s = session(ctx, c);
          const orgId = await resolveOrgOption(s.client, opts.org, 'to find the group and user');
          const reply = await s.client.call(op, {
            group_id: await resolveGroup(s.client, orgId, group),
            user_id: await resolveUser(s.client, orgId, user),
          });
          s.print(reply, () =>
            verb === 'add-member'
              ? `Added ${user} to group ${group}.\n`
              : `Removed ${user} from group ${group}.\n`,
          );
        });
    }

    cmd
      .command('remove')
      .description('Remove a group (and its realm memberships)')
      .argument('<group>', 'group id or name')
      .option('--org <org>', ORG_HELP)
      .action(async (group: string, opts: { org?: string }, c) => {
        const s = session(ctx, c);
        const orgId = await resolveOrgOption(s.client, opts.org, 'to find the group');
        const reply = await s.client.api.call('groups/remove', {
          id: await resolveGroup(s.client, orgId, group),
        });
        s.print(reply, () => `Removed group ${group}.\n`);
      });
  },
});
