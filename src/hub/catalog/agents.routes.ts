import { z } from 'zod';
import type { AgentsTable } from '../../db/schema.js';
import type { Agent } from '../../shared/api/catalog.js';
import { conflict, notFound } from '../../shared/errors.js';
import { requireOrg, requireUser } from '../access/access.service.js';
import type { Hub } from '../context.js';
import { id, op } from '../http/op.js';
import { findAgent } from './catalog.repo.js';
import { documentInput, getInput, listInput, registerFields } from './catalog.schemas.js';
import { normalizeAgentManifest } from './manifest.js';
import { byNameNewestFirst, offsetPage, registerVersion } from './versions.js';

export function agentOut(a: AgentsTable, withManifest = false): Agent {
  return {
    id: a.id,
    org_id: a.org_id,
    name: a.name,
    version: a.version,
    description: a.description,
    agent_type: a.agent_type,
    is_system: a.is_system === 1,
    created_at: a.created_at,
    updated_at: a.updated_at,
    ...(withManifest ? { manifest: JSON.parse(a.manifest) as unknown } : {}),
  };
}

export const agentOps = [
  op({
    name: 'agents/register',
    summary: 'Registers an agent version from its manifest (201 new, 200 overwritten with force).',
    input: z.object({
      ...registerFields,
      manifest: documentInput,
      description: z.string().max(10_000).optional(),
      agent_type: z.string().min(1, 'must not be empty').max(100).optional(),
    }),
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'agents.manage');
      const manifest = normalizeAgentManifest(input.manifest, input);
      const now = ctx.now();
      const row: AgentsTable = {
        id: ctx.newId(),
        org_id: org.id,
        name: manifest.name,
        version: manifest.version,
        description: manifest.description,
        agent_type: manifest.agent_type,
        manifest: JSON.stringify(manifest),
        is_system: 0,
        created_at: now,
        updated_at: now,
      };
      const created = await registerVersion(
        `agent ${row.name}@${row.version}`,
        input.force === true,
        async () => {
          await ctx.db.insertInto('agents').values(row).execute();
        },
        async () => {
          const r = await ctx.db
            .updateTable('agents')
            .set({
              description: row.description,
              agent_type: row.agent_type,
              manifest: row.manifest,
              updated_at: now,
            })
            .where('org_id', '=', org.id)
            .where('name', '=', row.name)
            .where('version', '=', row.version)
            .executeTakeFirst();
          return Number(r.numUpdatedRows);
        },
      );
      const saved = await findAgent(ctx.db, org.id, row.name, row.version);
      ctx.status(created ? 201 : 200);
      return { data: agentOut(saved!, true) };
    },
  }),
  op({
    name: 'agents/list',
    summary: "An organization's agents, by name, newest version first.",
    input: listInput,
    async handler(ctx, input) {
      const { org } = await requireOrg(ctx, ctx.actor, input.org_id, 'agents.view');
      const rows = await ctx.db
        .selectFrom('agents')
        .selectAll()
        .where('org_id', '=', org.id)
        .$if(input.name !== undefined, (q) => q.where('name', '=', input.name!))
        .execute();
      byNameNewestFirst(rows);
      const page = offsetPage(rows, input.limit, input.cursor);
      return { data: page.data.map((a) => agentOut(a)), next_cursor: page.next_cursor };
    },
  }),
  op({
    name: 'agents/get',
    summary: 'An agent by id, or by org_id and name with an optional version (default: newest).',
    input: getInput,
    async handler(ctx, input) {
      requireUser(ctx.actor);
      let agent: AgentsTable | null | undefined;
      if ('id' in input) {
        agent = await ctx.db.selectFrom('agents').selectAll().where('id', '=', input.id).executeTakeFirst();
        if (!agent) throw notFound('agent');
        await requireOrg(ctx, ctx.actor, agent.org_id, 'agents.view');
      } else {
        await requireOrg(ctx, ctx.actor, input.org_id, 'agents.view');
        agent = await findAgent(ctx.db, input.org_id, input.name, input.version ?? null);
        if (!agent) throw notFound('agent');
      }
      return { data: agentOut(agent, true) };
    },
  }),
  op({
    name: 'agents/remove',
    summary: 'Removes an agent version (refused while a team version uses it).',
    input: z.object({ id }),
    async handler(ctx, input) {
      requireUser(ctx.actor);
      const agent = await ctx.db
        .selectFrom('agents')
        .selectAll()
        .where('id', '=', input.id)
        .executeTakeFirst();
      if (!agent) throw notFound('agent');
      await requireOrg(ctx, ctx.actor, agent.org_id, 'agents.manage');
      const users = await teamsUsing(ctx, agent.org_id, 'agent_id', agent.id);
      if (users.length) throw conflict(`agent ${agent.name}@${agent.version} is used by ${users.join(', ')}`);
      await ctx.db.deleteFrom('agents').where('id', '=', agent.id).execute();
      return { data: { id: agent.id, removed: true } };
    },
  }),
];

/** Team versions of an org whose phases pin the given agent or team version. */
export async function teamsUsing(
  hub: Hub,
  orgId: string,
  key: 'agent_id' | 'team_version_id',
  refId: string,
) {
  const rows = await hub.db
    .selectFrom('team_versions')
    .select(['name', 'version', 'definition'])
    .where('org_id', '=', orgId)
    .execute();
  return rows
    .filter((r) =>
      (JSON.parse(r.definition) as { phases: Record<string, unknown>[] }).phases.some(
        (p) => p[key] === refId,
      ),
    )
    .map((r) => `team ${r.name}@${r.version}`);
}
