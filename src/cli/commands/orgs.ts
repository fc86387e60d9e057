import type { Invite } from '../../shared/api/access.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { resolveOrg, resolveUser } from '../resolve.js';

export type InviteOut = Invite;

/** The lines that tell an inviter how the invitee accepts. */
export function inviteText(inv: InviteOut): string {
  const lines = [
    formatRecord([
      ['invitation', inv.invite_id],
      ['email', inv.email],
      ['role', inv.role],
      ['expires', time(inv.expires_at)],
      ['e-mail sent', inv.email_sent],
      ['code', inv.code],
    ]),
  ];
  if (inv.code) lines.push(`Accept with:\n  svc invites accept ${inv.code} --password-stdin\n`);
  return lines.join('');
}

const roleOf = (v: string) => {
  if (v !== 'admin' && v !== 'member') throw usageError(`role must be admin or member, not "${v}"`);
  return v;
};

export default defineCommand({
  summary: 'Organizations: new, list, get, delete, invite, members, …',
  register(cmd, ctx) {
    cmd
      .command('new')
      .description('Create an organization and invite its owner (site administrators)')
      .argument('<slug>', 'URL-safe identifier (lowercase letters, digits, hyphens)')
      .requiredOption('--owner-email <email>', "the owner's e-mail address")
      .option('--display-name <name>', 'display name (default: the slug)')
      .option('--reactivate', 'restore a deleted organization with this slug')
      .action(
        async (slug: string, opts: { ownerEmail: string; displayName?: string; reactivate?: boolean }, c) => {
          const s = session(ctx, c);
          const reply = await s.client.api.call('orgs/new', {
            slug,
            owner: { email: opts.ownerEmail },
            ...(opts.displayName ? { display_name: opts.displayName } : {}),
            ...(opts.reactivate ? { reactivate: true } : {}),
          });
          s.print(reply, () => {
            const { org, owner_invite } = reply.data;
            const what = org.status === 'active' ? 'restored' : 'created';
            return `Organization ${org.slug} ${what} (${org.id}), status ${org.status}.\n${inviteText(owner_invite)}`;
          });
        },
      );

    withPaging(
      cmd.command('list').description('Organizations you belong to (all of them for site administrators)'),
    ).action(async (opts: { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('orgs/list', pageArgs(opts));
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('SLUG', 'slug'),
          col('NAME', 'display_name'),
          col('STATUS', 'status'),
          col('OWNER', (o) => o.owner.email),
          col('CREATED', (o) => time(o.created_at)),
        ],
        'No organizations.',
      );
    });

    cmd
      .command('get')
      .description('Show an organization')
      .argument('<org>', 'id or slug')
      .action(async (ref: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('orgs/get', {
          id: await resolveOrg(s.client, ref),
        });
        s.print(reply, () => {
          const o = reply.data;
          return formatRecord([
            ['id', o.id],
            ['slug', o.slug],
            ['name', o.display_name],
            ['status', o.status],
            ['owner', `${o.owner.email} (${o.owner.status})`],
            ['created', time(o.created_at)],
          ]);
        });
      });

    cmd
      .command('delete')
      .description('Delete an organization (soft: `svc orgs new SLUG --reactivate` restores it)')
      .argument('<org>', 'id or slug')
      .action(async (ref: string, _opts, c) => {
        const s = session(ctx, c);
        const reply = await s.client.api.call('orgs/delete', { id: await resolveOrg(s.client, ref) });
        s.print(reply, () => `Deleted organization ${ref}.\n`);
      });

    cmd
      .command('invite')
      .description('Invite a person to an organization')
      .argument('<org>', 'id or slug')
      .argument('<email>', 'their e-mail address')
      .requiredOption('--role <role>', 'admin or member')
      .action(async (ref: string, email: string, opts: { role: string }, c) => {
        const role = roleOf(opts.role);
        const s = session(ctx, c);
        const reply = await s.client.api.call('orgs/invite_member', {
          org_id: await resolveOrg(s.client, ref),
          email,
          role,
        });
        s.print(reply, () => inviteText(reply.data));
      });

    withPaging(
      cmd
        .command('members')
        .description("An organization's members and their roles")
        .argument('<org>', 'id or slug'),
    ).action(async (ref: string, opts: { limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('orgs/list_members', {
        org_id: await resolveOrg(s.client, ref),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', (m) => m.user.id),
          col('HANDLE', (m) => m.user.handle),
          col('EMAIL', (m) => m.user.email),
          col('ROLE', 'role'),
          col('STATUS', (m) => m.user.status),
        ],
        'No members.',
      );
    });

    cmd
      .command('set-role')
      .description("Change a member's role")
      .argument('<org>', 'id or slug')
      .argument('<user>', 'user id, handle or e-mail')
      .argument('<role>', 'admin or member')
      .action(async (ref: string, user: string, role: string, _opts, c) => {
        const s = session(ctx, c);
        const orgId = await resolveOrg(s.client, ref);
        const reply = await s.client.api.call('orgs/set_member_role', {
          org_id: orgId,
          user_id: await resolveUser(s.client, orgId, user),
          role: roleOf(role),
        });
        s.print(reply, () => `${user} is now ${role} of ${ref}.\n`);
      });

    cmd
      .command('remove-member')
      .description('Remove a member from the organization, its groups and realms')
      .argument('<org>', 'id or slug')
      .argument('<user>', 'user id, handle or e-mail')
      .action(async (ref: string, user: string, _opts, c) => {
        const s = session(ctx, c);
        const orgId = await resolveOrg(s.client, ref);
        const reply = await s.client.api.call('orgs/remove_member', {
          org_id: orgId,
          user_id: await resolveUser(s.client, orgId, user),
        });
        s.print(reply, () => `Removed ${user} from ${ref}.\n`);
      });
  },
});
