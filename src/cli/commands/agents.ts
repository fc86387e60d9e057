import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type CatalogRow, resolveCatalog } from '../catalog-refs.js';
import type { Page } from '../client.js';
import { defineCommand, pageArgs, session, withPaging } from '../command.js';
import { CliError, usageError } from '../context.js';
import { col, formatRecord, time } from '../output.js';
import { looksLikeId, resolveOrgOption } from '../resolve.js';

const ORG_HELP = 'organization id or slug (default: your only organization)';

/** Reads a manifest or definition file as text (sent as is: the hub parses YAML and JSON). */
export async function readCatalogFile(cwd: string, file: string): Promise<string> {
  try {
    return await readFile(path.resolve(cwd, file), 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

export default defineCommand({
  summary: 'The agent catalog: register, list, get, remove',
  register(cmd, ctx) {
    cmd
      .command('register')
      .description('Register an agent version from a manifest file (YAML or JSON)')
      .argument('<file>', 'the manifest, e.g. ./agent.yaml')
      .option('--org <org>', ORG_HELP)
      .option('--name <name>', 'overrides the manifest name')
      .option('--version <version>', 'overrides the manifest version')
      .option('--force', 'overwrite an existing registration of this version')
      .action(
        async (file: string, opts: { org?: string; name?: string; version?: string; force?: boolean }, c) => {
          const s = session(ctx, c);
          const manifest = await readCatalogFile(ctx.cwd, file);
          const orgId = await resolveOrgOption(s.client, opts.org, 'to register an agent');
          const reply = await s.client.call<{ data: CatalogRow }>('agents/register', {
            org_id: orgId,
            manifest,
            ...(opts.name ? { name: opts.name } : {}),
            ...(opts.version ? { version: opts.version } : {}),
            ...(opts.force ? { force: true } : {}),
          });
          const a = reply.data;
          s.print(reply, () => `Registered agent ${a.name}@${a.version} (${a.id}).\n`);
        },
      );

    withPaging(
      cmd
        .command('list')
        .description("An organization's agents, newest version first")
        .option('--org <org>', ORG_HELP)
        .option('--name <name>', 'only this agent'),
    ).action(async (opts: { org?: string; name?: string; limit?: number; cursor?: string }, c) => {
      const s = session(ctx, c);
      const orgId = await resolveOrgOption(s.client, opts.org, 'to list agents');
      const reply = await s.client.call<Page<CatalogRow>>('agents/list', {
        org_id: orgId,
        ...(opts.name ? { name: opts.name } : {}),
        ...pageArgs(opts),
      });
      s.printPage(
        reply,
        [
          col('ID', 'id'),
          col('NAME', 'name'),
          col('VERSION', 'version'),
          col('TYPE', 'agent_type'),
          col('DESCRIPTION', 'description'),
          col('UPDATED', (a) => time(a.updated_at)),
        ],
        'No agents.',
      );
    });

    cmd
      .command('get')
      .description('Show an agent version and its manifest')
      .argument('<agent>', 'agent id, or NAME[@VERSION] (default: newest)')
      .option('--org <org>', ORG_HELP)
      .action(async (ref: string, opts: { org?: string }, c) => {
        const s = session(ctx, c);
        const a = (await resolveCatalog(s.client, 'agents', ref, opts.org)) as CatalogRow & {
          manifest: { command?: string[]; timeout_ms?: number };
        };
        s.print({ ok: true, data: a }, () =>
          formatRecord([
            ['id', a.id],
            ['name', a.name],
            ['version', a.version],
            ['type', a.agent_type],
            ['description', a.description],
            ['command', a.manifest.command?.join(' ')],
            ['timeout', a.manifest.timeout_ms === undefined ? '-' : `${a.manifest.timeout_ms} ms`],
            ['updated', time(a.updated_at)],
          ]),
        );
      });

    cmd
      .command('remove')
      .description('Remove an agent version (refused while a team version uses it)')
      .argument('<agent>', 'agent id, or NAME@VERSION')
      .option('--org <org>', ORG_HELP)
      .action(async (ref: string, opts: { org?: string }, c) => {
        const s = session(ctx, c);
        if (!looksLikeId(ref) && !ref.includes('@'))
          throw usageError('name the version to remove: NAME@VERSION');
        const a = await resolveCatalog(s.client, 'agents', ref, opts.org);
        const reply = await s.client.call('agents/remove', { id: a.id });
        s.print(reply, () => `Removed agent ${a.name}@${a.version}.\n`);
      });
  },
});
