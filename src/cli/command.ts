import { type Command, InvalidArgumentError } from 'commander';
import { createHubClient, type HubClient, type Page } from './client.js';
import { hubClient } from './config.js';
import type { CliContext } from './context.js';
import { type Column, formatTable } from './output.js';

/**
 * A top-level command: one file in `src/cli/commands/`, named like the command (`orgs.ts` is
 * `svc orgs`). Adding a command is adding a file; the entry point finds it and loads it only when
 * it is run (or when the full help is shown).
 */
export interface CliCommand {
  /** One line in `svc --help`. */
  summary: string;
  /** `servers` lists it under "Servers" in `svc --help` (hub, dev, daemon); default `client`. */
  group?: 'servers' | 'client';
  /** Adds arguments, options, subcommands and actions to `cmd` (already named and described). */
  register(cmd: Command, ctx: CliContext): void;
}

export const defineCommand = (c: CliCommand): CliCommand => c;

/** A client command's hub connection and output mode (`--json`, `--profile` are global options). */
export interface Session {
  client: HubClient;
  json: boolean;
  /** Prints the raw reply with `--json`, else what `human` returns. */
  print(reply: unknown, human: () => string): void;
  /** A list reply as a table (or raw with `--json`), with a hint when there are more pages. */
  printPage<T>(reply: Page<T>, columns: Column<T>[], empty: string): void;
}

export function session(ctx: CliContext, cmd: Command, hubUrl?: string): Session {
  const globals = cmd.optsWithGlobals<{ json?: boolean; profile?: string }>();
  const json = globals.json === true;
  const client = hubUrl
    ? createHubClient({ url: hubUrl, fetch: ctx.fetch })
    : hubClient(ctx, globals.profile);
  const print = (reply: unknown, human: () => string) => {
    ctx.stdout.write(json ? `${JSON.stringify(reply, null, 2)}\n` : human());
  };
  return {
    client,
    json,
    print,
    printPage(reply, columns, empty) {
      print(reply, () => {
        if (reply.data.length === 0) return `${empty}\n`;
        const more = reply.next_cursor ? `(more: add --cursor ${reply.next_cursor})\n` : '';
        return formatTable(reply.data, columns) + more;
      });
    },
  };
}

/** Option parser for positive integers (`--limit 20`); a bad value is a usage error. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

/** `--limit` and `--cursor` on a list command; `pageArgs(opts)` turns them into the request fields. */
export function withPaging(cmd: Command): Command {
  return cmd
    .option('--limit <n>', 'page size (default 50, max 500)', positiveInt)
    .option('--cursor <cursor>', 'the next page, from a previous list');
}

export function pageArgs(opts: { limit?: number; cursor?: string }): Record<string, unknown> {
  return { ...(opts.limit ? { limit: opts.limit } : {}), ...(opts.cursor ? { cursor: opts.cursor } : {}) };
}
