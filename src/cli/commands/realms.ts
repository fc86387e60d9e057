import type { Command } from 'commander';
import type { RealmMember } from '../../shared/api/access.js';
import { type HubClient, listAll } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { realmOrg, resolveMember, resolveOrgOption, resolveRealm } from '../resolve.js';

type MemberRow = RealmMember;

const MEMBER_TYPES = ['user', 'group', 'daemon'] as const;
const ROLES = ['member', 'operator', 'admin'] as const;

function check<T extends string>(what: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value))
    throw usageError(`${what} must be one of ${allowed.join(', ')}, not "${value}"`);
  return value as T;
}

const orgOption = (c: Command) =>
  c.option('--org <org>', 'organization id or slug (to find a realm by name)');
const typeOption = (c: Command) => c.option('--type <type>', 'member type: user, group or daemon', 'user');

/** Names for member ids in the human listing; ids stay when a lookup is not allowed or fails. */
async function memberNames(
  client: HubClient,
  realmId: string,
  rows: MemberRow[],
): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const types = new Set(rows.map((r) => r.member_type));
  const orgId = await realmOrg(client, realmId).catch(() => null);
  const lookups: Promise<void>[] = [];
  if (types.has('user') && orgId) {
    lookups.push(
      listAll<{ user: { id: string; handle: string } }>(client, 'orgs/list_members', { org_id: orgId }).then(
        (ms) => {
          for (const m of ms) names.set(`user:${m.user.id}`, m.user.handle);
        },
      ),
    );
  }
  if (types.has('group') && orgId) {
    lookups.push(
      listAll<{ id: string; name: string }>(client, 'groups/list', { org_id: orgId }).then((gs) => {
        for (const g of gs) names.set(`group:${g.id}`, g.name);
      }),
    );
  }
  if (types.has('daemon')) {
    lookups.push(
      listAll<{ id: string; name: string }>(client, 'daemons/list', { realm_id: realmId }).then((ds) => {
        for (const d of ds) names.set(`daemon:${d.id}`, d.name);
      }),
    );
  }
  await Promise.all(lookups.map((p) => p.catch(() => undefined)));
  return names;
}

export default defineCommand({
  summary: 'Realms: new, list, get, remove, members, daemon-token, …',
  register(cmd, ctx) {
    cmd
      .command('new')
      .description('Create a realm in an organization')
      .argument('<name>', 'realm name (unique in the organization)')
      .option('--org <org>', 'organization id or slug (default: your only organization)')
      .action(async (name: string, opts: { org?: string }, c) => {
        const s = session(ctx, c);
        const orgId = await resolveOrgOption(s.client, opts.org, 'to create a realm');
        const reply = await s.client.api.call('realms/new', { org_id: orgId, name });
        s.print(reply, () => `Created realm ${reply.data.name} (${reply.data.id}).\n`);
      });

    withPaging(
      cmd
        .command('list')
        .description("An organization's realms that you can see")
        .option('--org <org>', 'organization id or slug (default: your only organization)'),
    ).action(async (opts: { org?: string; limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const orgId = await resolveOrgOption(s.client, opts.org, 'to list realms');
      const reply = await s.client.api.call('realms/list', { org_id: orgId, ...pageArgs(opts) });
      s.printPage(
        reply,
        [col('ID', 'id'), col('NAME', 'name'), col('CREATED', (r) => time(r.created_at))],
        'No realms.',
      );
    });

    orgOption(
      cmd.command('get').description('Show a realm and your role in it').argument('<realm>', 'id or name'),
    ).action(async (ref: string, opts: { org?: string }, c) => {
      const s = session(ctx, c);
      const id = await resolveRealm(s.client, ref, opts.org);
      const reply = await s.client.api.call('realms/get', {
        id,
      });
      s.print(reply, () =>
        formatRecord([
          ['id', reply.data.id],
          ['name', reply.data.name],
          ['org', reply.data.org_id],
          ['your role', reply.data.my_role],
          ['created', time(reply.data.created_at)],
        ]),
      );
    });

    orgOption(
      cmd
        .command('remove')
        .description('Remove a realm with its members and daemons (not the default realm)')
        .argument('<realm>', 'id or name'),
    ).action(async (ref: string, opts: { org?: string }, c) => {
      const s = session(ctx, c);
      const reply = await s.client.api.call('realms/remove', {
        id: await resolveRealm(s.client, ref, opts.org),
      });
      s.print(reply, () => `Removed realm ${ref}.\n`);
    });

    orgOption(
      cmd.command('members').description("A realm's members").argument('<realm>', 'id or name'),
    ).action(async (ref: string, opts: { org?: string }, c) => {
      const s = session(ctx, c);
      const realmId = await resolveRealm(s.client, ref, opts.org);
      const reply = await s.client.api.call('realms/list_members', { realm_id: realmId });
      const names = s.json ? new Map<string, string>() : await memberNames(s.client, realmId, reply.data);
      s.printPage(
        reply,
        [
          col('TYPE', 'member_type'),
          col('NAME', (m) => names.get(`${m.member_type}:${m.member_id}`)),
          col('ID', 'member_id'),
          col('ROLE', 'role'),
          col('ADDED', (m) => time(m.created_at)),
        ],
        'No members.',
      );
    });

    typeOption(
      orgOption(
        cmd
          .command('add-member')
          .description('Add a user, group or daemon to a realm')
          .argument('<realm>', 'id or name')
          .argument('<member>', 'user id, handle or e-mail; group id or name; daemon id or name')
          .option('--role <role>', 'member, operator or admin', 'member'),
      ),
    ).action(async (ref: string, member: string, opts: { org?: string; type: string; role: string }, c) => {
      const type = check('--type', opts.type, MEMBER_TYPES);
      const role = check('--role', opts.role, ROLES);
      const s = session(ctx, c);
      const realmId = await resolveRealm(s.client, ref, opts.org);
      const reply = await s.client.api.call('realms/add_member', {
        realm_id: realmId,
        member_type: type,
        member_id: await resolveMember(s.client, realmId, type, member),
        role,
      });
      s.print(reply, () => `Added ${type} ${member} to realm ${ref} as ${role}.\n`);
    });

    typeOption(
      orgOption(
        cmd
          .command('remove-member')
          .description('Remove a user, group or daemon from a realm (never its last admin)')
          .argument('<realm>', 'id or name')
          .argument('<member>', 'member id or name'),
      ),
    ).action(async (ref: string, member: string, opts: { org?: string; type: string }, c) => {
      const type = check('--type', opts.type, MEMBER_TYPES);
      const s = session(ctx, c);
      const realmId = await resolveRealm(s.client, ref, opts.org);
      const reply = await s.client.api.call('realms/remove_member', {
        realm_id: realmId,
        member_type: type,
        member_id: await resolveMember(s.client, realmId, type, member),
      });
      s.print(reply, () => `Removed ${type} ${member} from realm ${ref}.\n`);
    });

    typeOption(
      orgOption(
        cmd
          .command('set-role')
          .description("Change a realm member's role")
          .argument('<realm>', 'id or name')
          .argument('<member>', 'member id or name')
          .argument('<role>', 'member, operator or admin'),
      ),
    ).action(
      async (ref: string, member: string, roleArg: string, opts: { org?: string; type: string }, c) => {
        const type = check('--type', opts.type, MEMBER_TYPES);
        const role = check('role', roleArg, ROLES);
        const s = session(ctx, c);
        const realmId = await resolveRealm(s.client, ref, opts.org);
        const reply = await s.client.api.call('realms/set_member_role', {
          realm_id: realmId,
          member_type: type,
          member_id: await resolveMember(s.client, realmId, type, member),
          role,
        });
        s.print(reply, () => `${type} ${member} is now ${role} in realm ${ref}.\n`);
      },
    );

    orgOption(
      cmd
        .command('daemon-token')
        .description('Register a daemon in a realm and print its realm token (shown once)')
        .argument('<realm>', 'id or name')
        .argument('<name>', 'a name for the daemon, e.g. the machine'),
    ).action(async (ref: string, name: string, opts: { org?: string }, c) => {
      const s = session(ctx, c);
      const realmId = await resolveRealm(s.client, ref, opts.org);
      const reply = await s.client.api.call('realms/create_daemon_token', { realm_id: realmId, name });
      s.print(reply, () =>
        formatRecord([
          ['daemon', reply.data.daemon_id],
          ['token', reply.data.token],
        ]).concat(
          'The token is shown only this once. Start the daemon with:\n',
          `  SVC_HUB_URL=${s.client.url} SVC_REALM_TOKEN=${reply.data.token} svc daemon\n`,
        ),
      );
    });
  },
});
