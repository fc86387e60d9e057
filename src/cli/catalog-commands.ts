import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { type CatalogRow, resolveCatalog } from './catalog-refs.js';
import type { Page } from './client.js';
import { pageArgs, session, withPaging } from './command.js';
import { type CliContext, CliError, usageError } from './context.js';
import { type Column, formatRecord } from './output.js';
import { looksLikeId, resolveOrgOption } from './resolve.js';

/**
 * `register`, `list`, `get` and `remove` of a versioned catalog resource (`svc agents …`,
 * `svc teams …`): the two differ only in names, the body field of the file and what they show.
 */

export const ORG_HELP = 'organization id or slug (default: your only organization)';

export interface CatalogResource<T extends CatalogRow> {
  /** `agents` or `teams`: the operations' prefix. */
  ops: 'agents' | 'teams';
  /** `agent` or `team`, in messages. */
  noun: string;
  /** The register body's field for the file: `manifest` or `definition`. */
  field: 'manifest' | 'definition';
  /** What the file is, in help: `manifest` or `definition`. */
  fileName: string;
  listDescription: string;
  getDescription: string;
  removeDescription: string;
  columns: Column<T>[];
  record(row: T): (readonly [string, unknown])[];
}

/** Reads a manifest or definition file as text (sent as is: the hub parses YAML and JSON). */
export async function readCatalogFile(cwd: string, file: string): Promise<string> {
  try {
    return await readFile(path.resolve(cwd, file), 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

export function addCatalogCommands<T extends CatalogRow>(
  cmd: Command,
  ctx: CliContext,
  r: CatalogResource<T>,
): void {
  const ref = `<${r.noun}>`;
  cmd
    .command('register')
    .description(
      `Register ${r.noun === 'agent' ? 'an' : 'a'} ${r.noun} version from a ${r.fileName} file (YAML or JSON)`,
    )
    .argument('<file>', `the ${r.fileName}, e.g. ./${r.noun}.yaml`)
    .option('--org <org>', ORG_HELP)
    .option('--name <name>', `overrides the ${r.fileName} name`)
    .option('--version <version>', `overrides the ${r.fileName} version`)
    .option('--force', 'overwrite an existing registration of this version')
    .action(
      async (file: string, opts: { org?: string; name?: string; version?: string; force?: boolean }, c) => {
        const s = session(ctx, c);
        const text = await readCatalogFile(ctx.cwd, file);
        const orgId = await resolveOrgOption(
          s.client,
          opts.org,
          `to register ${r.noun === 'agent' ? 'an' : 'a'} ${r.noun}`,
        );
        const reply = await s.client.call<{ data: T }>(`${r.ops}/register`, {
          org_id: orgId,
          [r.field]: text,
          ...(opts.name ? { name: opts.name } : {}),
          ...(opts.version ? { version: opts.version } : {}),
          ...(opts.force ? { force: true } : {}),
        });
        const row = reply.data;
        s.print(reply, () => `Registered ${r.noun} ${row.name}@${row.version} (${row.id}).\n`);
      },
    );

  withPaging(
    cmd
      .command('list')
      .description(r.listDescription)
      .option('--org <org>', ORG_HELP)
      .option('--name <name>', `only this ${r.noun}`),
  ).action(async (opts: { org?: string; name?: string; limit?: number; cursor?: string }, c) => {
    const s = session(ctx, c);
    const orgId = await resolveOrgOption(s.client, opts.org, `to list ${r.ops}`);
    const reply = await s.client.call<Page<T>>(`${r.ops}/list`, {
      org_id: orgId,
      ...(opts.name ? { name: opts.name } : {}),
      ...pageArgs(opts),
    });
    s.printPage(reply, r.columns, `No ${r.ops}.`);
  });

  cmd
    .command('get')
    .description(r.getDescription)
    .argument(ref, `${r.noun} ${r.ops === 'teams' ? 'version ' : ''}id, or NAME[@VERSION] (default: newest)`)
    .option('--org <org>', ORG_HELP)
    .action(async (given: string, opts: { org?: string }, c) => {
      const s = session(ctx, c);
      const row = (await resolveCatalog(s.client, r.ops, given, opts.org)) as T;
      s.print({ ok: true, data: row }, () => formatRecord(r.record(row)));
    });

  cmd
    .command('remove')
    .description(r.removeDescription)
    .argument(ref, `${r.noun} ${r.ops === 'teams' ? 'version ' : ''}id, or NAME@VERSION`)
    .option('--org <org>', ORG_HELP)
    .action(async (given: string, opts: { org?: string }, c) => {
      const s = session(ctx, c);
      if (!looksLikeId(given) && !given.includes('@'))
        throw usageError('name the version to remove: NAME@VERSION');
      const row = await resolveCatalog(s.client, r.ops, given, opts.org);
      const reply = await s.client.call(`${r.ops}/remove`, { id: row.id });
      s.print(reply, () => `Removed ${r.noun} ${row.name}@${row.version}.\n`);
    });
}
