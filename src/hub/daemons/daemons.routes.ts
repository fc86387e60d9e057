import { z } from 'zod';
import { requireRealm, requireUser } from '../access/access.service.js';
import { cursor, id, limit, op } from '../http/op.js';
import { keysetPage } from '../http/paging.js';
import { daemonOut, loadLiveDaemon } from './daemons.repo.js';
import { signDispatchToken } from './dispatch.js';

export const daemonOps = [
  op({
    name: 'daemons/list',
    summary: "A realm's daemons with their online status.",
    input: z.object({ realm_id: id, limit, cursor }),
    async handler(ctx, input) {
      const { realm } = await requireRealm(ctx, ctx.actor, input.realm_id, 'runs.view');
      const page = await keysetPage(
        ctx.db
          .selectFrom('daemons')
          .selectAll()
          .where('realm_id', '=', realm.id)
          .where('revoked_at', 'is', null),
        input,
      );
      return { data: page.data.map(daemonOut), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'daemons/get',
    summary: 'A daemon: status online|offline and last_seen_at.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const d = await loadLiveDaemon(ctx, input.id);
      await requireRealm(ctx, user, d.realm_id, 'runs.view');
      return { data: daemonOut(d) };
    },
  }),
  op({
    name: 'daemons/remove',
    summary: 'Removes a daemon and revokes its realm token.',
    input: z.object({ id }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const d = await loadLiveDaemon(ctx, input.id);
      await requireRealm(ctx, user, d.realm_id, 'daemons.manage');
      await ctx.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('daemons')
          .set({ revoked_at: ctx.now(), status: 'offline' })
          .where('id', '=', d.id)
          .execute();
        await trx
          .deleteFrom('realm_members')
          .where('member_type', '=', 'daemon')
          .where('member_id', '=', d.id)
          .execute();
      });
      ctx.tunnel.disconnect(d.id, 'the daemon was removed');
      return { data: { id: d.id, removed: true } };
    },
  }),
  op({
    name: 'daemons/issue_dispatch_token',
    summary:
      'A short-lived JWT (aud = the daemon id) for calling that daemon from another host as yourself: the daemon allows what your realm role allows.',
    input: z.object({ daemon_id: id }),
    async handler(ctx, input) {
      const user = requireUser(ctx.actor);
      const d = await loadLiveDaemon(ctx, input.daemon_id);
      // Realm operator+ (the operator-level permission of CONTRACT.md §3).
      await requireRealm(ctx, user, d.realm_id, 'teams.install');
      return { data: await signDispatchToken(ctx, d.id, { kind: 'user', userId: user.user.id }) };
    },
  }),
];
