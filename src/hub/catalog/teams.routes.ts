import { z } from 'zod';
import type { TeamVersionsTable } from '../../db/schema.js';
import { conflict, notFound } from '../../shared/errors.js';
import { requireOrg, requireUser } from '../access/access.service.js';
import { id, op } from '../http/op.js';
import { teamsUsing } from './agents.routes.js';
import { findTeamVersion } from './catalog.repo.js';
import { documentInput, getInput, listInput, registerFields } from './catalog.schemas.js';
import { settleInstalls } from './installs.service.js';
import { normalizeTeamDefinition } from './manifest.js';
import { pinDefinition, teamOut } from './teams.service.js';
import { byNameNewestFirst, offsetPage, registerVersion } from './versions.js';

export const teamOps = [
  op({
    name: 'teams/register',
    summary: 'Registers a team version; agent and team references are resolved and pinned.',
    input: z.object({
      ...registerFields,
      definition: documentInput,
    }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'teams.manage');
      const def = await pinDefinition(ctx, org.id, normalizeTeamDefinition(input.definition, input));
      const existing = await ctx.db
        .selectFrom('team_versions')
        .select('team_id')
        .where('org_id', '=', org.id)
        .where('name', '=', def.name)
        .executeTakeFirst();
      const now = ctx.now();
      const row: TeamVersionsTable = {
        id: ctx.newId(),
        team_id: existing?.team_id ?? ctx.newId(),
        org_id: org.id,
        name: def.name,
        version: def.version,
        description: def.description,
        definition: JSON.stringify(def),
        created_at: now,
        updated_at: now,
      };
      const created = await registerVersion(
        `team ${row.name}@${row.version}`,
        input.force === true,
        async () => {
          await ctx.db.insertInto('team_versions').values(row).execute();
        },
        async () => {
          const r = await ctx.db
            .updateTable('team_versions')
            .set({ description: row.description, definition: row.definition, updated_at: now })
            .where('org_id', '=', org.id)
            .where('name', '=', row.name)
            .where('version', '=', row.version)
            .executeTakeFirst();
          return Number(r.numUpdatedRows);
        },
      );
      const saved = await findTeamVersion(ctx.db, org.id, row.name, row.version);
      ctx.status(created ? 201 : 200);
      return { data: teamOut(saved!) };
    },
  }),
  op({
    name: 'teams/list',
    summary: "An organization's team versions, by name, newest version first.",
    input: listInput,
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'teams.view');
      const rows = await ctx.db
        .selectFrom('team_versions')
        .selectAll()
        .where('org_id', '=', org.id)
        .$if(input.name !== undefined, (q) => q.where('name', '=', input.name!))
        .execute();
      byNameNewestFirst(rows);
      const page = offsetPage(rows, input.limit, input.cursor);
      return { data: page.data.map(teamOut), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'teams/get',
    summary: 'A team version by id (team_version_id), or by org_id and name with an optional version.',
    input: getInput,
    async handler(ctx, input) {
      requireUser(ctx.actor);
      let tv: TeamVersionsTable | null | undefined;
      if ('id' in input) {
        tv = await ctx.db
          .selectFrom('team_versions')
          .selectAll()
          .where('id', '=', input.id)
          .executeTakeFirst();
        if (!tv) throw notFound('team');
        await requireOrg(ctx, ctx.actor, tv.org_id, 'teams.view');
      } else {
        await requireOrg(ctx, ctx.actor, input.org_id, 'teams.view');
        tv = await findTeamVersion(ctx.db, input.org_id, input.name, input.version ?? null);
        if (!tv) throw notFound('team');
      }
      return { data: teamOut(tv) };
    },
  }),
  op({
    name: 'teams/remove',
    summary: 'Removes a team version (refused while another team version calls it).',
    input: z.object({ id }),
    async handler(ctx, input) {
      requireUser(ctx.actor);
      const tv = await ctx.db
        .selectFrom('team_versions')
        .selectAll()
        .where('id', '=', input.id)
        .executeTakeFirst();
      if (!tv) throw notFound('team');
      await requireOrg(ctx, ctx.actor, tv.org_id, 'teams.manage');
      const users = await teamsUsing(ctx, tv.org_id, 'team_version_id', tv.id);
      if (users.length) throw conflict(`team ${tv.name}@${tv.version} is called by ${users.join(', ')}`);
      await settleInstalls(ctx);
      const installed = await ctx.db
        .selectFrom('team_installs')
        .select('daemon_id')
        .where('team_version_id', '=', tv.id)
        .where((eb) => eb.or([eb('status', '=', 'installed'), eb('pending_action', '=', 'install')]))
        .execute();
      if (installed.length) {
        throw conflict(
          `team ${tv.name}@${tv.version} is installed on ${installed.length} daemon(s); uninstall it first`,
          { daemon_ids: installed.map((r) => r.daemon_id) },
        );
      }
      await ctx.db.deleteFrom('team_versions').where('id', '=', tv.id).execute();
      return { data: { id: tv.id, removed: true } };
    },
  }),
];
